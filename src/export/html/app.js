// stallbench report.html: draws each strategy's timelines from the JSON in
// #stallbench-data with uPlot, marks the blocker and the DDL tries on them,
// and shows the figures and the lock chain of the hovered second in
// #readout. Text goes on the page through textContent only. The JSON is one
// run's figures (drawn into #timelines), or `runs`, each drawn into the
// element it names with a cursor of its own (check: one run per migration).
(function () {
  "use strict";
  var doc = JSON.parse(document.getElementById("stallbench-data").textContent);
  var runs = doc.runs || [{ target: "timelines", label: "", data: doc }];
  var readout = document.getElementById("readout");
  var css = getComputedStyle(document.documentElement);
  function color(name) { return css.getPropertyValue(name).trim(); }
  var SYNC = "stallbench";
  var charts = [];

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }

  function fmt(value, digits) {
    if (value === null || value === undefined) return "-";
    return Number(value).toFixed(digits);
  }

  // Second k covers [k, k+1): one more point at the end carries the last
  // second's value to its end.
  function xs(s) {
    var x = s.second.slice();
    x.push(x.length ? x[x.length - 1] + 1 : 1);
    return x;
  }
  function extend(column) {
    var out = column.slice();
    out.push(out.length ? out[out.length - 1] : null);
    return out;
  }

  // The index of the second that holds x (not the nearest point): the
  // charts are stepped, so second 10 spans 10.0 to 11.0; none past the
  // strategy's last second. uPlot keeps it in cursor.idxs (cursor.idx is
  // the nearest point).
  function secondIndex(u, seriesIdx, closestIdx, xValue) {
    var x = u.data[0];
    if (xValue === null || xValue === undefined || x.length < 2) return null;
    if (xValue >= x[x.length - 1]) return null;
    var lo = 0, hi = x.length - 2;
    if (xValue < x[0]) return 0;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (x[mid] <= xValue) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  // The blocker's window, each DDL try faint over the chart's height, and a
  // bar at the top: light while the try waited for its lock, solid from the grant.
  function drawSpans(s) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox;
      var px = function (x) { return u.valToPos(x, "x", true); };
      var minWidthPx = Math.max(1, b.width / 300);
      ctx.save();
      ctx.beginPath();
      ctx.rect(b.left, b.top, b.width, b.height);
      ctx.clip();
      if (s.blocker_s) {
        ctx.fillStyle = color("--blocker");
        ctx.fillRect(px(s.blocker_s[0]), b.top, Math.max(minWidthPx, px(s.blocker_s[1]) - px(s.blocker_s[0])), b.height);
      }
      var bar = Math.max(3, b.height / 25);
      s.attempts.forEach(function (a) {
        var ok = a.outcome === "ok";
        var x0 = px(a.started_s), x1 = Math.max(px(a.ended_s), x0 + minWidthPx);
        ctx.fillStyle = color(ok ? "--ok" : "--failed");
        ctx.fillRect(x0, b.top, x1 - x0, b.height);
        var solid = color(ok ? "--ok-bar" : "--failed-bar");
        var granted = a.granted_s === null ? null : Math.min(px(a.granted_s), x1);
        ctx.globalAlpha = 0.35;
        ctx.fillStyle = solid;
        ctx.fillRect(x0, b.top, (granted === null ? x1 : granted) - x0, bar);
        ctx.globalAlpha = 1;
        if (granted !== null) ctx.fillRect(granted, b.top, Math.max(minWidthPx, x1 - granted), bar);
      });
      ctx.restore();
    };
  }

  function chart(target, s, spec, label) {
    var width = Math.max(320, target.clientWidth || s.root.clientWidth || 900);
    var opts = {
      width: width,
      height: spec.height || 170,
      cursor: { sync: { key: s.sync, setSeries: false }, drag: { x: true, y: false }, dataIdx: secondIndex },
      scales: { x: { time: false, range: fullOrZoomed(s.axes.x_max_s) }, y: spec.y },
      axes: [
        { stroke: color("--text"), grid: { stroke: color("--rule"), width: 0.5 } },
        { label: spec.unit, stroke: color("--text"), grid: { stroke: color("--rule"), width: 0.5 }, size: 60,
          splits: spec.y.distr === 3 ? decades : undefined }
      ],
      series: [{ label: "second (s)" }].concat(spec.series),
      bands: spec.bands || [],
      hooks: { drawClear: [drawSpans(s)], setCursor: [showSecond(s)] }
    };
    var u = new uPlot(opts, spec.data, target);
    u.over.addEventListener("mouseenter", function () { active = u; });
    u.root.setAttribute("role", "img");
    u.root.setAttribute("aria-label", label);
    charts.push({ strategy: s.name, panel: spec.name, u: u });
    return u;
  }

  // The x range: every chart of a run spans its longest timeline, xMax,
  // unless zoomed (a drag asks for less than this chart's data spans).
  function fullOrZoomed(xMax) {
    return function (u, min, max) {
      var x = u.data[0];
      if (min === null || max === null || !x.length || (min <= x[0] && max >= x[x.length - 1])) {
        return [0, xMax];
      }
      return [min, max];
    };
  }

  // A log axis with one line per power of ten, not per minor step.
  function decades(u, axisIdx, min, max) {
    var out = [];
    for (var p = Math.floor(Math.log10(min)); Math.pow(10, p) <= max * 1.0001; p++) {
      if (Math.pow(10, p) >= min * 0.9999) out.push(Math.pow(10, p));
    }
    return out;
  }

  var stepped = uPlot.paths.stepped({ align: 1 });
  function line(label, stroke, extra) {
    var series = { label: label, stroke: color(stroke), width: 1.5, paths: stepped, spanGaps: false,
      points: { show: false } };
    for (var k in extra) series[k] = extra[k];
    return series;
  }

  function describeTps(s) {
    var zero = s.tps.filter(function (t) { return t === 0; }).length;
    var max = s.tps.reduce(function (m, t) { return Math.max(m, t); }, 0);
    var text = s.label + ": transactions per second over " + s.second.length + " s, up to " + max +
      ", " + zero + " s at 0";
    if (s.replica && s.replica.tps) {
      var replicaZero = s.replica.tps.filter(function (t) { return t === 0; }).length;
      text += "; on the replica up to " + s.replica.tps.reduce(function (m, t) { return Math.max(m, t); }, 0) +
        ", " + replicaZero + " s at 0";
    }
    return text;
  }

  function panels(s) {
    var x = xs(s);
    var list = [];
    var tps = { name: "tps", unit: "tps", y: { range: [0, s.axes.tps_max] }, data: [x, extend(s.tps)],
      series: [line("tps", "--tps", { fill: color("--tps-fill") })] };
    if (s.tps_low.length) {
      tps.data.push(extend(s.tps_high), extend(s.tps_low));
      tps.series.push(line("repeats' highest", "--band", { width: 0.5 }), line("repeats' lowest", "--band", { width: 0.5 }));
      tps.bands = [{ series: [2, 3], fill: color("--band") }];
    }
    if (s.replica && s.replica.tps) {
      tps.data.push(extend(s.replica.tps));
      tps.series.push(line("replica tps", "--replica"));
    }
    list.push([tps, describeTps(s)]);
    list.push([{ name: "latency", unit: "ms (log)", height: 190,
      y: { distr: 3, log: 10, range: [s.axes.latency_min_ms, s.axes.latency_max_ms] },
      data: [x, extend(s.p50_ms), extend(s.p99_ms), extend(s.max_ms)],
      series: [line("p50 ms", "--p50"), line("p99 ms", "--p99"), line("max ms", "--max")] },
      s.label + ": latency per second, p50, p99 and max, log scale"]);
    list.push([{ name: "waiters", unit: "sessions", height: 140, y: { range: [0, s.axes.waiters_max] },
      data: [x, extend(s.waiters), extend(s.behind_ddl)],
      series: [line("lock waiters", "--waiters"), line("behind the DDL", "--behind")] },
      s.label + ": sessions waiting for a lock per second, up to " +
        s.waiters.reduce(function (m, w) { return Math.max(m, w); }, 0)]);
    if (s.replica) {
      var r = s.replica;
      var maxLag = r.lag_s.reduce(function (m, v) { return Math.max(m, v); }, 0);
      var maxWaiting = r.waiters.reduce(function (m, v) { return Math.max(m, v); }, 0);
      var waited = r.replay_waiting.filter(function (w) { return w === 1; }).length;
      list.push([{ name: "replica", unit: "s, sessions", height: 140,
        y: { range: [0, Math.max(1, maxLag, maxWaiting) * 1.15] },
        data: [x, extend(r.lag_s), extend(r.waiters)],
        series: [line("replay lag s", "--replica"), line("waiting on the replica", "--behind")] },
        s.label + ": the hot standby per second, replay lag up to " + fmt(maxLag, 1) +
          " s, replay waited for a lock in " + waited + " s"]);
    }
    if (s.failure_kinds.length) {
      var palette = ["--max", "--p99", "--waiters", "--behind", "--p50", "--tps"];
      var failMax = 1;
      s.failures.forEach(function (col) { col.forEach(function (n) { failMax = Math.max(failMax, n); }); });
      list.push([{ name: "failures", unit: "failed/s", height: 140, y: { range: [0, failMax * 1.15] },
        data: [x].concat(s.failures.map(extend)),
        series: s.failure_kinds.map(function (kind, i) { return line(kind, palette[i % palette.length]); }) },
        s.label + ": failed transactions per second by kind"]);
    }
    return list;
  }

  function spansLegend(s) {
    var p = el("p", null, "spans");
    function item(name, text) {
      var sw = el("span", null, "swatch");
      sw.style.background = color(name);
      p.appendChild(sw);
      p.appendChild(document.createTextNode(text));
    }
    if (s.blocker_s) item("--blocker", "blocker " + fmt(s.blocker_s[0], 1) + "-" + fmt(s.blocker_s[1], 1) + " s");
    if (s.attempts.length) {
      item("--failed-bar", "failed DDL try");
      item("--ok-bar", "DDL try that succeeded (the bar on top: light while waiting for the lock, solid once granted)");
    }
    return p;
  }

  function figuresTable(s) {
    var details = el("details");
    details.appendChild(el("summary", "Figures per second"));
    var filled = false;
    function fill() {
      if (filled) return;
      filled = true;
      var table = el("table");
      var head = el("tr");
      var names = ["second", "tps", "failed", "p50 ms", "p99 ms", "max ms", "lock waiters", "behind DDL", "ddl", "lock chain"];
      if (s.replica) names.push("replay lag s", "waiting on the replica");
      if (s.replica && s.replica.tps) names.push("replica tps");
      names.forEach(function (t) { head.appendChild(el("th", t)); });
      table.appendChild(el("thead")).appendChild(head);
      var body = el("tbody");
      s.second.forEach(function (sec, i) {
        var row = el("tr");
        var cells = [sec, s.tps[i], s.failed[i], fmt(s.p50_ms[i], 3), fmt(s.p99_ms[i], 3), fmt(s.max_ms[i], 3),
          s.waiters[i], s.behind_ddl[i], s.ddl_state[i], s.chain_at[i] < 0 ? "" : s.chains[s.chain_at[i]]];
        if (s.replica) cells.push(fmt(s.replica.lag_s[i], 3), s.replica.waiters[i]);
        if (s.replica && s.replica.tps) cells.push(s.replica.tps[i]);
        cells.forEach(function (v) { row.appendChild(el("td", String(v))); });
        body.appendChild(row);
      });
      table.appendChild(body);
      details.appendChild(table);
    }
    details.addEventListener("toggle", fill);
    addEventListener("beforeprint", function () { fill(); details.open = true; });
    return details;
  }

  function secondFigures(s, i) {
    var failures = [];
    s.failure_kinds.forEach(function (kind, k) {
      if (s.failures[k][i]) failures.push(s.failures[k][i] + " " + kind);
    });
    return {
      strategy: s.name, label: s.label, second: s.second[i], tps: s.tps[i], failed: s.failed[i],
      p50: s.p50_ms[i], p99: s.p99_ms[i], max: s.max_ms[i], waiters: s.waiters[i],
      ddl: s.ddl_state[i], failures: failures,
      chain: s.chain_at[i] < 0 ? "" : s.chains[s.chain_at[i]],
      replica: s.replica ? "replica: " + (s.replica.tps ? s.replica.tps[i] + " tps, " : "") +
        "replay lag " + fmt(s.replica.lag_s[i], 1) + " s, " +
        s.replica.waiters[i] + " waiting for a lock" +
        (s.replica.replay_waiting[i] ? ", replay waited for a lock" : "") : ""
    };
  }

  // Every chart follows the cursor (sync); the readout follows the one the
  // pointer is on.
  var active = null;
  function showSecond(s) {
    return function (u) {
      if (u !== active) return;
      var i = u.cursor.idxs ? u.cursor.idxs[0] : null;
      if (i === null || i === undefined || u.cursor.left < 0 || i >= s.second.length) {
        readout.hidden = true;
        return;
      }
      render(secondFigures(s, i));
    };
  }

  function render(f) {
    readout.hidden = false;
    readout.textContent = "";
    readout.dataset.strategy = f.strategy;
    readout.dataset.second = f.second;
    readout.dataset.tps = f.tps;
    readout.dataset.chain = f.chain;
    readout.appendChild(el("strong", f.label + ", second " + f.second + " (" + f.second + "-" + (f.second + 1) + " s)"));
    readout.appendChild(el("div", f.tps + " tps, " + f.failed + " failed; latency p50 " + fmt(f.p50, 1) +
      " ms, p99 " + fmt(f.p99, 1) + " ms, max " + fmt(f.max, 1) + " ms"));
    readout.appendChild(el("div", f.waiters + " waiting for a lock; DDL " + f.ddl));
    if (f.replica) readout.appendChild(el("div", f.replica));
    f.failures.forEach(function (text) { readout.appendChild(el("div", "failed: " + text)); });
    readout.appendChild(el("div", f.chain ? f.chain : "no one waited for a lock", "chain"));
  }

  runs.forEach(function (run, r) {
    var root = document.getElementById(run.target);
    if (!root) return;
    run.data.strategies.forEach(function (s) {
      s.axes = run.data;
      s.root = root;
      s.sync = SYNC + "-" + r;
      s.label = run.label ? run.label + ": " + s.name : s.name;
      var section = el("section", null, "strategy");
      section.appendChild(el("h3", s.name));
      section.appendChild(spansLegend(s));
      root.appendChild(section);
      panels(s).forEach(function (pair) {
        var box = el("div", null, "chart");
        section.appendChild(box);
        chart(box, s, pair[0], pair[1]);
      });
      section.appendChild(figuresTable(s));
    });
  });

  addEventListener("resize", function () {
    charts.forEach(function (c) {
      var width = Math.max(320, c.u.root.parentNode.clientWidth);
      if (width !== c.u.width) c.u.setSize({ width: width, height: c.u.height });
    });
  });

  // The browser tests' hook (#selftest=STRATEGY:SECOND): hovers that second
  // of the strategy's TPS chart and writes what the page did into #selftest.
  function selftest(spec) {
    var cut = spec.lastIndexOf(":");
    var parts = [spec.slice(0, cut), spec.slice(cut + 1)];
    var result = { errors: window.__errors.slice(), canvases: document.querySelectorAll("canvas").length,
      charts: charts.length, blank: [], hover: null, synced: [],
      resources: performance.getEntriesByType("resource").length, pwned: window.__pwned !== undefined };
    charts.forEach(function (c) {
      var ctx = c.u.ctx, b = c.u.bbox;
      var pixels = ctx.getImageData(b.left, b.top, Math.max(1, b.width), Math.max(1, b.height)).data;
      var drawn = 0;
      for (var p = 3; p < pixels.length; p += 4) if (pixels[p] > 0) drawn++;
      if (drawn < 200) result.blank.push(c.strategy + " " + c.panel);
    });
    var target = charts.filter(function (c) { return c.strategy === parts[0] && c.panel === "tps"; })[0];
    if (target) {
      var second = Number(parts[1]);
      var rect = target.u.over.getBoundingClientRect();
      active = target.u;
      target.u.over.dispatchEvent(new MouseEvent("mousemove", {
        clientX: rect.left + target.u.valToPos(second + 0.8, "x"),
        clientY: rect.top + rect.height / 2, bubbles: true }));
      result.hover = { strategy: readout.dataset.strategy || null, second: Number(readout.dataset.second),
        tps: Number(readout.dataset.tps), chain: readout.dataset.chain || "", text: readout.textContent };
      result.synced = charts.map(function (c) { return c.u.cursor.idxs ? c.u.cursor.idxs[0] : null; });
    }
    result.errors = window.__errors.slice();
    document.getElementById("selftest").textContent = JSON.stringify(result);
  }
  if (location.hash.indexOf("#selftest=") === 0) {
    addEventListener("load", function () { selftest(decodeURIComponent(location.hash.slice(10))); });
  }
})();
