// The simulator: reorder, grade, change k and R; the server's engine computes the figures.
"use strict";
(function () {
  const root = document.getElementById("simulator");
  if (!root) { return; }
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const seed = JSON.parse(root.dataset.seed);
  const state = { docs: seed.docs.map((d) => ({ id: d.id, grade: d.grade })), k: seed.k,
                  relevant: seed.relevant_in_collection, mode: "binary" };
  if (state.docs.some((d) => d.grade > 1)) { state.mode = "graded"; }
  // Where the suite has them: each document's text, and the documents judged relevant.
  const texts = JSON.parse(root.dataset.texts || "{}");
  const judged = JSON.parse(root.dataset.relevant || "[]");
  const missingList = document.getElementById("missing");
  const missingNone = document.getElementById("missing-none");
  const cutNote = document.getElementById("cut-note");
  const list = document.getElementById("docs");
  const kInput = document.getElementById("k");
  const rInput = document.getElementById("relevant");
  const mode = document.getElementById("mode");
  const errorBox = document.getElementById("sim-error");
  mode.value = state.mode;
  let dragged = null;
  let pending = 0;
  let requested = 0;

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) { node.setAttribute(key, value); }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function listedRelevant() { return state.docs.filter((d) => d.grade >= 1).length; }

  function move(from, to) {
    if (to < 0 || to >= state.docs.length || from === to) { return; }
    const [doc] = state.docs.splice(from, 1);
    state.docs.splice(to, 0, doc);
    changed();
  }

  function gradeFor(grade) { return state.mode === "binary" ? Math.min(grade, 1) : grade; }

  function withText(item, id) {
    if (Object.prototype.hasOwnProperty.call(texts, id)) {
      item.append(el("div", { class: "doctext" }, texts[id]));
    }
  }

  function renderMissing() {
    // The documents judged relevant that the ranking lacks, each with a button adding it last.
    if (!missingList) { return; }
    missingList.replaceChildren();
    const ranked = new Set(state.docs.map((d) => d.id));
    const missing = judged.filter((d) => !ranked.has(d.id));
    for (const doc of missing) {
      const item = el("li", { "data-id": doc.id, "data-grade": String(doc.grade) });
      const add = el("button", { type: "button", class: "add-missing" }, "add to the ranking");
      add.addEventListener("click", () => { state.docs.push({ id: doc.id, grade: gradeFor(doc.grade) }); changed(); });
      item.append(el("code", {}, doc.id), " grade " + doc.grade + " ", add);
      withText(item, doc.id);
      missingList.append(item);
    }
    if (missingNone) { missingNone.hidden = missing.length > 0; }
  }

  function render() {
    list.replaceChildren();
    state.docs.forEach((doc, index) => {
      const classes = [doc.grade >= 1 ? "relevant" : "nonrelevant"];
      if (index + 1 === state.k) { classes.push("cut"); }
      const item = el("li", { draggable: "true", "data-id": doc.id, "data-grade": String(doc.grade),
                              class: classes.join(" ") });
      if (index + 1 === state.k) { item.dataset.cut = "cut at k = " + state.k; }
      item.append(el("span", { class: "rank" }, String(index + 1) + "."), " ",
                  el("code", {}, doc.id), " ");
      const up = el("button", { type: "button", class: "up", title: "move up" }, "\u2191");
      up.addEventListener("click", () => move(index, index - 1));
      const down = el("button", { type: "button", class: "down", title: "move down" }, "\u2193");
      down.addEventListener("click", () => move(index, index + 1));
      item.append(up, down, " ");
      if (state.mode === "binary") {
        const box = el("input", { type: "checkbox", class: "relevant-toggle", title: "relevant" });
        box.checked = doc.grade >= 1;
        box.addEventListener("change", () => { doc.grade = box.checked ? 1 : 0; changed(); });
        const label = el("label", {});
        label.append(box, " relevant");
        item.append(label);
      } else {
        const select = el("select", { class: "grade-select", title: "grade" });
        for (const g of [0, 1, 2, 3]) { select.append(el("option", { value: String(g) }, "grade " + g)); }
        select.value = String(doc.grade);
        select.addEventListener("change", () => { doc.grade = Number(select.value); changed(); });
        item.append(select);
      }
      const remove = el("button", { type: "button", class: "remove", title: "remove" }, "\u00d7");
      remove.addEventListener("click", () => { state.docs.splice(index, 1); changed(); });
      item.append(" ", remove);
      withText(item, doc.id);
      item.addEventListener("dragstart", () => { dragged = index; });
      item.addEventListener("dragover", (event) => event.preventDefault());
      item.addEventListener("drop", (event) => { event.preventDefault(); if (dragged !== null) { move(dragged, index); } dragged = null; });
      list.append(item);
    });
    kInput.value = String(state.k);
    rInput.value = String(state.relevant);
    // A blank list has no cut to speak of; a ranking shorter than k has no line to draw.
    const count = state.docs.length;
    const beyond = count > 0 && state.k > count;
    cutNote.hidden = !beyond;
    cutNote.textContent = beyond
      ? "k = " + state.k + " is beyond the ranking's " + count
        + (count === 1 ? " document" : " documents") + ": every document is above the cut."
      : "";
    renderMissing();
  }

  function showMetrics(result) {
    const body = document.querySelector("#sim-metrics tbody");
    body.replaceChildren();
    for (const name of Object.keys(result.metrics)) {
      const row = el("tr", { "data-metric": name });
      const cell = el("td", {});
      cell.append(el("a", { href: result.explain[name].definition }, name));
      row.append(cell, el("td", { class: "num value" }, result.shown[name]),
                 el("td", { class: "formula" }, result.explain[name].formula),
                 el("td", { class: "worked" }, result.explain[name].worked));
      body.append(row);
    }
  }

  async function recompute() {
    // Answers may come back out of order: only the latest request's figures are shown.
    requested += 1;
    const mine = requested;
    pending += 1;
    root.dataset.pending = String(pending);
    try {
      const response = await fetch("/api/simulate", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ docs: state.docs, k: state.k, relevant_in_collection: state.relevant }),
      });
      const result = await response.json();
      if (mine !== requested) { return; }
      if (!response.ok) { errorBox.textContent = result.error; return; }
      errorBox.textContent = "";
      showMetrics(result);
      root.dataset.computed = String(Number(root.dataset.computed || "0") + 1);
    } catch (error) {
      errorBox.textContent = "the server did not answer: " + error;
    } finally {
      pending -= 1;
      root.dataset.pending = String(pending);
    }
  }

  function changed() {
    state.relevant = Math.max(state.relevant, listedRelevant());
    render();
    recompute();
  }

  kInput.addEventListener("change", () => { state.k = Math.max(1, Number(kInput.value) || 1); changed(); });
  rInput.addEventListener("change", () => { state.relevant = Math.max(0, Number(rInput.value) || 0); changed(); });
  mode.addEventListener("change", () => {
    state.mode = mode.value;
    if (state.mode === "binary") { state.docs.forEach((d) => { d.grade = d.grade >= 1 ? 1 : 0; }); }
    changed();
  });
  document.getElementById("add-doc").addEventListener("click", () => {
    const input = document.getElementById("new-doc");
    const id = input.value.trim() || "doc" + (state.docs.length + 1);
    if (state.docs.some((d) => d.id === id)) { errorBox.textContent = "doc id " + id + " is listed already"; return; }
    const known = judged.find((d) => d.id === id);
    state.docs.push({ id: id, grade: known ? gradeFor(known.grade) : 0 });
    input.value = "";
    changed();
  });
  render();
  root.dataset.ready = "1";
}());
