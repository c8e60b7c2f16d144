// tracelens report: draws the figures embedded in the page, switches their time axis and colour
// scheme, keeps zoom and run visibility in step across figures, and filters the findings table.
// It reads only the page's own JSON block and never turns data into HTML (no innerHTML).
(function () {
  "use strict";

  var MINUTE = 60000;
  var SCHEMES = {
    light: { fg: "#1d232b", muted: "#5b6573", grid: "#e3e7ec", line: "#b8c0ca", hover: "#ffffff" },
    dark: { fg: "#e3e7ed", muted: "#9aa4b2", grid: "#2b323d", line: "#4a5462", hover: "#1c2129" },
  };
  var TYPED = {
    f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array,
    i2: Int16Array, u2: Uint16Array, i1: Int8Array, u1: Uint8Array, u1c: Uint8ClampedArray,
  };

  var root = document.documentElement;
  var data = JSON.parse(document.getElementById("tl-data").textContent);
  var figures = []; // {key, el, time, spec}
  var state = { time: "since", theme: "auto" };
  var syncing = false;

  // Plotly's base64 arrays ({dtype, bdata}) as plain typed arrays, so the time switch can shift them.
  function decode(value) {
    if (!value || typeof value !== "object" || !value.bdata || !TYPED[value.dtype]) return value;
    var raw = atob(value.bdata);
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return new TYPED[value.dtype](bytes.buffer);
  }

  function dark() {
    if (state.theme === "dark") return true;
    if (state.theme === "light") return false;
    return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }

  function shifted(values, scale, offset) {
    var out = new Float64Array(values.length);
    for (var i = 0; i < values.length; i++) out[i] = offset + values[i] * scale;
    return out;
  }

  // The traces of one figure for the current time axis: built in minutes since each run's start,
  // shifted to wall-clock milliseconds (Plotly reads numbers on a date axis as ms) when asked.
  function traces(fig) {
    return fig.spec.data.map(function (trace) {
      var meta = trace.meta;
      if (state.time !== "clock" || !meta || meta.origin === undefined) return trace;
      var copy = Object.assign({}, trace);
      if (meta.bar && trace.base) {
        copy.base = shifted(trace.base, MINUTE, meta.origin);
        copy.x = shifted(trace.x, MINUTE, 0);
      } else {
        copy.x = shifted(trace.x, MINUTE, meta.origin);
      }
      return copy;
    });
  }

  function layout(fig) {
    var s = SCHEMES[dark() ? "dark" : "light"];
    var out = JSON.parse(JSON.stringify(fig.spec.layout));
    out.font = Object.assign({}, out.font, { color: s.fg });
    out.hoverlabel = { bgcolor: s.hover, bordercolor: s.line, font: { color: s.fg } };
    ["xaxis", "yaxis"].forEach(function (name) {
      var axis = (out[name] = out[name] || {});
      axis.gridcolor = s.grid;
      axis.linecolor = s.line;
      axis.zerolinecolor = s.line;
      axis.tickcolor = s.line;
    });
    (out.shapes || []).forEach(function (shape) {
      if (shape.line) shape.line.color = s.muted;
    });
    if (fig.time) {
      out.xaxis.type = state.time === "clock" ? "date" : "linear";
      out.xaxis.title = { text: state.time === "clock" ? "wall clock (the log's own time)" : "minutes since run start" };
      if (fig.range) {
        out.xaxis.range = fig.range[state.time];
        out.xaxis.autorange = fig.range[state.time] ? false : true;
      }
    }
    return out;
  }

  var CONFIG = {
    responsive: true,
    displaylogo: false,
    modeBarButtonsToRemove: ["select2d", "lasso2d"],
  };

  function draw(fig) {
    return Plotly.react(fig.el, traces(fig), layout(fig), Object.assign({}, CONFIG, {
      toImageButtonOptions: { filename: "tracelens-" + fig.key },
    }));
  }

  function redrawAll() {
    return figures.reduce(function (chain, fig) {
      return chain.then(function () { return draw(fig); });
    }, Promise.resolve());
  }

  function sameRange(fig, update) {
    var axis = (fig.el.layout || {}).xaxis || {};
    if (update["xaxis.autorange"]) return axis.autorange === true;
    var r = axis.range, want = update["xaxis.range"];
    return !axis.autorange && r && String(r[0]) === String(want[0]) && String(r[1]) === String(want[1]);
  }

  // A range picked on one time figure shows on the others (same axis mode).
  function onRelayout(source, event) {
    if (syncing || !source.time) return;
    var update = null;
    if (event["xaxis.autorange"]) update = { "xaxis.autorange": true };
    else if (event["xaxis.range[0]"] !== undefined) update = { "xaxis.range": [event["xaxis.range[0]"], event["xaxis.range[1]"]] };
    else if (event["xaxis.range"]) update = { "xaxis.range": event["xaxis.range"].slice() };
    if (!update) return;
    syncing = true;
    var jobs = figures.filter(function (f) { return f.time && f !== source && !sameRange(f, update); }).map(function (f) {
      return Plotly.relayout(f.el, update);
    });
    Promise.all(jobs).then(function () { syncing = false; }, function () { syncing = false; });
  }

  function groupVisible(group) {
    for (var i = 0; i < figures.length; i++) {
      var d = figures[i].el.data || [];
      for (var j = 0; j < d.length; j++) {
        if (d[j].legendgroup === group) return d[j].visible !== "legendonly" && d[j].visible !== false;
      }
    }
    return true;
  }

  // Runs are shown or hidden in every figure at once (legend click; double click isolates).
  function setGroups(visibleOf) {
    figures.forEach(function (fig) {
      var d = fig.el.data || [];
      var indices = [], values = [];
      d.forEach(function (trace, i) {
        if (trace.legendgroup === undefined) return;
        var show = visibleOf(trace.legendgroup);
        indices.push(i);
        values.push(show ? true : "legendonly");
        fig.spec.data[i].visible = show ? true : "legendonly";
      });
      if (indices.length) Plotly.restyle(fig.el, { visible: values }, indices);
    });
  }

  function onLegendClick(fig, event) {
    var group = event.data[event.curveNumber].legendgroup;
    if (group === undefined) return true;
    var show = !groupVisible(group);
    var current = {};
    figures.forEach(function (f) {
      (f.el.data || []).forEach(function (t) {
        if (t.legendgroup !== undefined && !(t.legendgroup in current)) current[t.legendgroup] = groupVisible(t.legendgroup);
      });
    });
    setGroups(function (g) { return g === group ? show : current[g]; });
    return false;
  }

  function onLegendDoubleClick(fig, event) {
    var group = event.data[event.curveNumber].legendgroup;
    if (group === undefined) return true;
    var others = false;
    figures.forEach(function (f) {
      (f.el.data || []).forEach(function (t) {
        if (t.legendgroup !== undefined && t.legendgroup !== group && groupVisible(t.legendgroup)) others = true;
      });
    });
    setGroups(function (g) { return others ? g === group : true; });
    return false;
  }

  function rememberRange(fig) {
    if (!fig.time) return;
    fig.el.on("plotly_relayout", function (event) {
      fig.range = fig.range || {};
      if (event["xaxis.autorange"]) fig.range[state.time] = null;
      else if (event["xaxis.range[0]"] !== undefined) fig.range[state.time] = [event["xaxis.range[0]"], event["xaxis.range[1]"]];
      else if (event["xaxis.range"]) fig.range[state.time] = event["xaxis.range"].slice();
      onRelayout(fig, event);
    });
  }

  function setTime(mode) {
    state.time = mode;
    document.querySelectorAll("[data-time]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-time") === mode));
    });
    return redrawAll();
  }

  function setTheme(theme) {
    state.theme = theme;
    root.setAttribute("data-theme", theme);
    var button = document.getElementById("theme-toggle");
    if (button) button.textContent = "theme: " + theme;
    return redrawAll();
  }

  function filterFindings() {
    var table = document.getElementById("findings-table");
    if (!table) return;
    var shown = {};
    document.querySelectorAll("[data-filter]").forEach(function (box) {
      shown[box.getAttribute("data-filter")] = box.checked;
    });
    table.querySelectorAll("tbody tr").forEach(function (row) {
      row.classList.toggle("hidden", shown[row.getAttribute("data-severity")] === false);
    });
  }

  function start() {
    data.plots.forEach(function (plot) {
      var el = document.getElementById("plot-" + plot.key);
      if (!el) return;
      plot.figure.data.forEach(function (trace) {
        if (trace.meta && trace.meta.origin !== undefined) {
          trace.x = decode(trace.x);
          if (trace.meta.bar) trace.base = decode(trace.base);
        }
      });
      figures.push({ key: plot.key, el: el, time: plot.time, spec: plot.figure, range: null });
    });
    document.querySelectorAll("[data-time]").forEach(function (button) {
      button.addEventListener("click", function () { setTime(button.getAttribute("data-time")); });
    });
    var themes = ["auto", "light", "dark"];
    var toggle = document.getElementById("theme-toggle");
    if (toggle) toggle.addEventListener("click", function () {
      setTheme(themes[(themes.indexOf(state.theme) + 1) % themes.length]);
    });
    if (window.matchMedia) {
      var query = window.matchMedia("(prefers-color-scheme: dark)");
      var follow = function () { if (state.theme === "auto") redrawAll(); };
      if (query.addEventListener) query.addEventListener("change", follow);
    }
    document.querySelectorAll("[data-filter]").forEach(function (box) {
      box.addEventListener("change", filterFindings);
    });
    redrawAll().then(function () {
      figures.forEach(function (fig) {
        rememberRange(fig);
        fig.el.on("plotly_legendclick", function (event) { return onLegendClick(fig, event); });
        fig.el.on("plotly_legenddoubleclick", function (event) { return onLegendDoubleClick(fig, event); });
      });
      document.body.setAttribute("data-ready", String(figures.length));
      window.tracelensReady = true;
    }, function (error) {
      document.body.setAttribute("data-ready", "failed");
      throw error;
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
