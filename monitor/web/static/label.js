// Grade buttons on a query page: each posts one judgment to the suite's judgment layer.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const status = document.getElementById("label-status");
  const who = document.getElementById("labeler");
  for (const group of document.querySelectorAll(".label-buttons")) {
    for (const button of group.querySelectorAll("button.grade")) {
      button.addEventListener("click", async () => {
        const body = { suite: group.dataset.suite, query_id: group.dataset.query,
                       doc_id: group.dataset.doc, grade: Number(button.dataset.grade),
                       who: who ? who.value : "web" };
        const response = await fetch("/api/labels", {
          method: "POST", credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
          body: JSON.stringify(body),
        });
        const result = await response.json();
        if (status) {
          status.textContent = response.ok
            ? "recorded " + body.doc_id + " = " + body.grade + " by " + result.recorded.who
            : result.error;
        }
        if (!response.ok) { return; }
        // The document may stand in both rankings: its buttons go from both once it is graded
        // (for this query only: a page of several queries may show it for another).
        for (const same of document.querySelectorAll(".label-buttons")) {
          if (same.dataset.doc === body.doc_id && same.dataset.query === body.query_id) {
            same.replaceChildren(document.createTextNode("graded " + body.grade));
          }
        }
      });
    }
  }
}());
