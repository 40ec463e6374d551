/* gridwms pages: charts, confirmations, messages. Loaded deferred on every page. */
(function () {
  "use strict";
  const script = document.currentScript;

  /* Charts: each is a placeholder and its figure as JSON (web/core/charts.py to_html), drawn
     when it comes near the view (an IntersectionObserver, 300 px ahead), so that a page
     draws only what is seen. plotly (its basic bundle: bar, pie and scatter; about 1.2 MB) is
     fetched once, when the first chart comes near, and only on a page that has one. */
  let plotly = null; // the promise of window.Plotly
  function loadPlotly() {
    if (!plotly) {
      plotly = window.Plotly
        ? Promise.resolve(window.Plotly)
        : new Promise(function (resolve, reject) {
            const tag = document.createElement("script");
            tag.src = script.dataset.plotly;
            tag.onload = function () { resolve(window.Plotly); };
            tag.onerror = reject;
            document.head.appendChild(tag);
          });
    }
    return plotly;
  }

  function drawChart(el) {
    loadPlotly().then(function (Plotly) {
      const fig = JSON.parse(el.textContent);
      Plotly.newPlot(el.dataset.chart, fig.data, fig.layout, {
        displaylogo: false,
        responsive: true,
      });
    });
  }

  function drawCharts() {
    const specs = document.querySelectorAll("script[data-chart]");
    if (!specs.length) return;
    if (!("IntersectionObserver" in window)) {
      specs.forEach(drawChart);
      return;
    }
    const near = new IntersectionObserver(
      function (entries) {
        entries.forEach(function (entry) {
          if (!entry.isIntersecting) return;
          near.unobserve(entry.target);
          drawChart(entry.target.querySelector("script[data-chart]"));
        });
      },
      { rootMargin: "300px 0px" }
    );
    // The placeholder's box (the <script> has none); a chart in a hidden part of the page (a
    // closed <details>) is drawn when it is shown.
    specs.forEach(function (el) { near.observe(el.parentElement); });
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

  /* A bulk action (data-confirm-bulk="job": the name of its checkboxes) asks with the count it
     applies to: the ticked boxes, or data-confirm-all when its "all" box is ticked; the verb is
     the chosen action's, with the option's data-note. Nothing ticked: no question (the server
     says nothing was selected). The server asks the same on a page of its own without this. */
  function bulkQuestion(form) {
    const all = form.querySelector("input[name=all]");
    const ticked = form.querySelectorAll(
      'input[type=checkbox][name="' + form.dataset.confirmBulk + '"]:checked'
    ).length;
    const everything = all && all.checked;
    if (!everything && !ticked) return null;
    const count = everything ? form.dataset.confirmAll : String(ticked);
    const option = form.querySelector("select[name=action]").selectedOptions[0];
    const verb = option.textContent.trim();
    const noun = form.dataset.confirmBulk + (count === "1" ? "" : "s");
    const what = everything ? "all " + count + " " + noun + " these filters select" : count + " " + noun;
    const note = option.dataset.note ? " " + option.dataset.note : "";
    return { question: verb + " " + what + "?" + note, action: verb };
  }

  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!form.matches("form[data-confirm], form[data-confirm-bulk]")) return;
    if (form.dataset.confirmed === "yes") return;
    const ask = form.dataset.confirmBulk
      ? bulkQuestion(form)
      : { question: form.dataset.confirm, action: form.dataset.confirmAction };
    if (!ask) return;
    event.preventDefault();
    const submitter = event.submitter && event.submitter.form === form ? event.submitter : null;
    const d = confirmDialog();
    d.querySelector(".question").textContent = ask.question;
    d.querySelector("button[value=yes]").textContent = ask.action || "Confirm";
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

  /* A running job's output tail (data-live-job: its API URL) follows its pilot's heartbeats
     every 5 s while the tab is visible; once its state changes the page reloads, to show the
     state, the full stdout and stderr and the output files. */
  function followJob() {
    const tail = document.querySelector("[data-live-job]");
    if (!tail) return;
    const timer = setInterval(function () {
      if (document.hidden) return;
      fetch(tail.dataset.liveJob, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (job) {
          if (!job) return;
          if (job.status !== tail.dataset.status) {
            clearInterval(timer);
            window.location.reload();
            return;
          }
          if (tail.textContent !== job.output_tail) tail.textContent = job.output_tail;
        })
        .catch(function () {});
    }, 5000);
  }

  /* Auto-refresh (config/refresh.py): off by default; the choice is kept per page path in
     this browser; when on, the page reloads every N s while it is in view (a hidden tab
     reloads when it comes back, if its time has passed). */
  function autoRefresh() {
    const box = document.querySelector("input[data-auto-refresh]");
    if (!box) return;
    const key = "gridwms:auto-refresh:" + window.location.pathname;
    const seconds = Number(box.dataset.autoRefresh) || 30;
    let due = null;
    function arm() {
      due = box.checked ? Date.now() + seconds * 1000 : null;
    }
    box.checked = window.localStorage.getItem(key) === "on";
    box.addEventListener("change", function () {
      if (box.checked) window.localStorage.setItem(key, "on");
      else window.localStorage.removeItem(key);
      arm();
    });
    arm();
    setInterval(function () {
      if (due !== null && !document.hidden && Date.now() >= due) window.location.reload();
    }, 1000);
  }

  /* A header checkbox data-tick-all="name" ticks or clears the page's checkboxes of that name. */
  document.addEventListener("change", function (event) {
    const all = event.target.closest("input[data-tick-all]");
    if (!all) return;
    const form = all.form || document;
    form.querySelectorAll('input[type=checkbox][name="' + all.dataset.tickAll + '"]').forEach(
      function (box) { box.checked = all.checked; }
    );
  });

  // Charts once the page has loaded (and been painted): plotly's parsing holds up neither.
  if (document.readyState === "complete") drawCharts();
  else window.addEventListener("load", drawCharts, { once: true });
  followJob();
  autoRefresh();
})();
