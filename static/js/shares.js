/* The Shares page's group edit (templates/shares/edit_row.html): its preview follows the
   JobShare typed, before Save. GET /shares/groups/<pk>/?job_share= answers every group's
   expected share with it (JSON), or why it would be refused; Preview asks again in place. */
(function () {
  "use strict";

  function cell(tag, text, className) {
    const el = document.createElement(tag);
    el.textContent = text;
    if (className) el.className = className;
    return el;
  }

  function draw(box, data) {
    box.replaceChildren();
    box.appendChild(cell("p", data.summary, "preview-summary"));
    const table = cell("table", "", "compact preview-table");
    const head = table.createTHead().insertRow();
    head.appendChild(cell("th", "group"));
    ["JobShare", "expected now", "expected with " + data.job_share].forEach(function (t) {
      head.appendChild(cell("th", t, "num"));
    });
    const body = table.createTBody();
    data.rows.forEach(function (r) {
      const tr = body.insertRow();
      tr.dataset.group = r.group;
      if (r.edited) tr.className = "edited";
      tr.appendChild(cell("td", r.group));
      const changed = r.edited && r.job_share !== r.job_share_now;
      tr.appendChild(cell("td", (changed ? r.job_share_now + " → " : "") + r.job_share, "num"));
      tr.appendChild(cell("td", r.expected_now_text, "num"));
      const expected = cell("td", r.expected_text, "num");
      expected.dataset.k = "expected";
      if (!r.waiting) {
        expected.append(" ");
        expected.appendChild(cell("span", "(nothing waiting)", "muted"));
      }
      tr.appendChild(expected);
    });
    box.appendChild(table);
  }

  function refresh(form) {
    const input = form.querySelector("input[name$='-job_share']");
    const asked = input.value.trim();
    const url = form.dataset.preview + "?job_share=" + encodeURIComponent(asked);
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        if (input.value.trim() !== asked) return; // a newer value is on its way
        const errors = form.querySelector(".edit-errors");
        const box = form.querySelector(".share-preview");
        errors.replaceChildren();
        input.closest("label").classList.toggle("has-error", !data.valid);
        if (!data.valid) {
          data.errors.job_share.forEach(function (e) { errors.appendChild(cell("p", e)); });
          box.replaceChildren();
          return;
        }
        draw(box, data);
      });
  }

  let timer = null;
  document.addEventListener("input", function (event) {
    const form = event.target.closest("form.group-form");
    if (!form || !event.target.name.endsWith("-job_share")) return;
    clearTimeout(timer);
    timer = setTimeout(function () { refresh(form); }, 250);
  });
  document.addEventListener("click", function (event) {
    const cancel = event.target.closest("form.group-form a.cancel");
    if (cancel) cancel.closest("tr.edit-row").classList.remove("open");
    const button = event.target.closest("form.group-form button[name=preview]");
    if (!button) return;
    event.preventDefault();
    refresh(button.form);
  });

  function opened() {
    const id = location.hash.slice(1);
    const row = id && document.getElementById(id);
    if (!row || !row.matches("tr.edit-row")) return;
    const form = row.querySelector("form.group-form");
    if (!row.classList.contains("open")) refresh(form); // a page come back open shows its own
    form.querySelector("input[name$='-job_share']").focus();
  }
  window.addEventListener("hashchange", opened);
  opened();
  const back = document.querySelector("tr.edit-row.open"); // refused or previewed: in view
  if (back) {
    back.scrollIntoView({ block: "center" });
    back.querySelector("input[name$='-job_share']").focus();
  }
})();
