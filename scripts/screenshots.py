"""Regenerate the README's screenshots of the web app (docs/screenshots/*.png).

Run from the repository root, with Chromium and chromedriver installed::

    python scripts/screenshots.py

It fills a temporary store by running the embedded default suite (the bundled Larkfield
set: the seeded rerank baseline and the keyword run), serves the app on a free loopback
port and saves the suites page, the query page of Q34 and the simulator on that query
with its lost relevant passage added back at rank 3 with grade 2 (graded mode), in a
headless Chromium 1280 pixels wide.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
import tempfile
import time
from pathlib import Path

from monitor.config import default_config
from monitor.job import run_suite
from monitor.store import open_store
from monitor.web import WebSettings
from monitor.web.server import WebServer

OUT = Path("docs/screenshots")
#: Q34's relevant passage, lost by the keyword run: put back at rank 3 in the simulator.
RELEVANT = "d9a5bd8ea531"
CHROMEDRIVER = "/usr/bin/chromedriver"


def main() -> int:
    """Write the screenshots; return 0."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        store_path = Path(folder) / "m.db"
        config = default_config()
        with open_store(store_path) as store, contextlib.redirect_stdout(io.StringIO()):
            run_suite(config.suite("larkfield"), store, progress=False)
        settings = WebSettings(config=config, store=lambda: open_store(store_path), warm=False)
        server = WebServer(settings, "127.0.0.1", 0)
        server.start()
        options = webdriver.ChromeOptions()
        for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"):
            options.add_argument(argument)
        options.binary_location = shutil.which("chromium") or "chromium"
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        base = server.url.rstrip("/")
        try:
            shots = {
                "suites.png": ("/", 520),
                "query.png": ("/suites/larkfield/runs/2/queries/Q34", 1100),
            }
            for name, (path, height) in shots.items():
                driver.set_window_size(1280, height)
                driver.get(base + path)
                driver.save_screenshot(str(OUT / name))
                print(f"wrote {OUT / name}")
            driver.set_window_size(1280, 1000)
            driver.get(base + "/simulator?suite=larkfield&run=2&query=Q34")
            root = driver.find_element(By.ID, "simulator")
            Select(driver.find_element(By.ID, "mode")).select_by_value("graded")
            driver.find_element(By.ID, "new-doc").send_keys(RELEVANT)
            driver.find_element(By.ID, "add-doc").click()
            mine = f'#docs li[data-id="{RELEVANT}"]'
            Select(driver.find_element(By.CSS_SELECTOR, f"{mine} select")).select_by_value("2")
            for _ in range(8):  # up to rank 3
                driver.find_element(By.CSS_SELECTOR, f"{mine} button.up").click()
            deadline = time.monotonic() + 10
            while root.get_attribute("data-pending") != "0" and time.monotonic() < deadline:
                time.sleep(0.05)
            driver.execute_script("window.scrollTo(0, 0)")
            driver.save_screenshot(str(OUT / "simulator.png"))
            print(f"wrote {OUT / 'simulator.png'}")
        finally:
            driver.quit()
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
