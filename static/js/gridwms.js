/* gridwms pages: charts, confirmations, messages. Loaded deferred on every page. */
(function () {
  "use strict";
  const script = document.currentScript;

  /* Charts: each is a placeholder and its figure as JSON (matcher/charts.py to_html). plotly
     (4.8 MB) is fetched only when the page has one, without holding the page up. */
  function drawCharts() {
    const specs = document.querySelectorAll("script[data-chart]");
    if (!specs.length) return;
    const draw = function () {
      specs.forEach(function (el) {
        const fig = JSON.parse(el.textContent);
        window.Plotly.newPlot(el.dataset.chart, fig.data, fig.layout, {
          displaylogo: false,
          responsive: true,
        });
      });
    };
    if (window.Plotly) {
      draw();
      return;
    }
    const plotly = document.createElement("script");
    plotly.src = script.dataset.plotly;
    plotly.onload = draw;
    document.head.appendChild(plotly);
  }

  /* Destructive actions ask first: a form with data-confirm="question" (and
     data-confirm-action="Kill") opens a dialog; yes posts the form with confirm=yes. Without
     this script the server asks on a page of its own (config/confirm.py). */
  let dialog = null;
  function confirmDialog() {
    if (dialog) return dialog;
    dialog = document.createElement("dialog");
    dialog.id = "confirm-dialog";
    dialog.innerHTML =
      '<form method="dialog"><p class="question"></p><div class="actions">' +
      '<button value="yes" class="danger"></button>' +
      '<button value="cancel" class="secondary">Cancel</button></div></form>';
    document.body.appendChild(dialog);
    return dialog;
  }

  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!form.matches("form[data-confirm]") || form.dataset.confirmed === "yes") return;
    event.preventDefault();
    const submitter = event.submitter && event.submitter.form === form ? event.submitter : null;
    const d = confirmDialog();
    d.querySelector(".question").textContent = form.dataset.confirm;
    d.querySelector("button[value=yes]").textContent = form.dataset.confirmAction || "Confirm";
    d.returnValue = "";
    d.onclose = function () {
      if (d.returnValue !== "yes") return;
      const yes = document.createElement("input");
      yes.type = "hidden";
      yes.name = "confirm";
      yes.value = "yes";
      form.appendChild(yes);
      form.dataset.confirmed = "yes";
      form.requestSubmit(submitter);
      // The submission is under way: a page restored from the back/forward cache asks again.
      yes.remove();
      delete form.dataset.confirmed;
    };
    d.showModal();
    d.querySelector("button[value=cancel]").focus();
  });

  /* Messages stay in view (they stick to the top) until dismissed. */
  document.addEventListener("click", function (event) {
    const close = event.target.closest(".msg .dismiss");
    if (close) close.parentElement.remove();
  });

  drawCharts();
})();
