/* The live parameters page: filter the rows as one types, and bring a refused value into view.
   Without this script the same filter works through the form (?q=, ?changed=1) and the refused
   field is focused by its autofocus attribute. */
(function () {
  "use strict";
  const form = document.getElementById("param-filter");
  if (!form) return;
  const q = document.getElementById("param-q");
  const changed = document.getElementById("param-changed");
  const shown = document.getElementById("param-shown");
  const none = document.getElementById("param-none");

  function words() {
    return q.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  }

  function apply() {
    const want = words();
    const onlyChanged = changed.checked;
    let total = 0;
    document.querySelectorAll("section.param-cat").forEach(function (section) {
      let n = 0;
      section.querySelectorAll(".param").forEach(function (row) {
        const text = row.dataset.search || "";
        const match =
          want.every(function (w) { return text.indexOf(w) !== -1; }) &&
          (!onlyChanged || row.dataset.changed === "1");
        const show = match || row.classList.contains("refused");
        row.hidden = !show;
        if (show) n += 1;
      });
      section.hidden = n === 0;
      const link = form.querySelector('.param-jump a[data-cat="' + section.dataset.cat + '"]');
      if (link) {
        link.hidden = n === 0;
        link.querySelector(".n").textContent = n;
      }
      total += n;
    });
    shown.textContent = total;
    none.hidden = total !== 0;
    // The address carries the filter: a reload, and each row's form, keep it.
    const url = new URL(window.location.href);
    if (q.value.trim()) url.searchParams.set("q", q.value.trim());
    else url.searchParams.delete("q");
    if (onlyChanged) url.searchParams.set("changed", "1");
    else url.searchParams.delete("changed");
    window.history.replaceState(null, "", url.pathname + url.search + url.hash);
  }

  q.addEventListener("input", apply);
  changed.addEventListener("change", apply);
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    apply();
  });

  /* A refused value: the summary stays on top (sticky); the field comes to the middle of the
     window, focused. */
  const summary = document.getElementById("error-summary");
  if (summary) {
    const link = summary.querySelector("a[href^='#']");
    const field = link && document.getElementById(decodeURIComponent(link.hash.slice(1)));
    if (field) {
      field.scrollIntoView({ block: "center" });
      field.focus({ preventScroll: true });
    }
    summary.addEventListener("click", function (event) {
      const a = event.target.closest("a[href^='#']");
      const target = a && document.getElementById(decodeURIComponent(a.hash.slice(1)));
      if (!target) return;
      event.preventDefault();
      target.scrollIntoView({ block: "center" });
      target.focus({ preventScroll: true });
    });
  }
})();
