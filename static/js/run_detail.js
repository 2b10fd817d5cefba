// The run page: the tps/latency chart and the iostat/vmstat charts, all on one x axis (seconds
// since pgbench started, from 0 to warm-up + duration, the warm-up shaded and labelled); and
// while the run is queued or runs, live updates: what it waits for, where it is and when pgbench
// ends, every sample once (the event stream replays from the start), the steps, and the log,
// which follows its newest line unless the reader has scrolled up and shows each sample as pgbench's
// progress line.
(function () {
  const page = document.getElementById("run-page");
  const data = JSON.parse(document.getElementById("chart-data").textContent);
  const finished = page.dataset.finished === "true";
  const { axisTitle, withUnit, warmupShade, eventMarkers, markerLegendItems, make, valueAxis } = window.BenchlabCharts;
  const warmup = data.warmup_s || 0;
  const total = warmup + data.duration_s;

  // ---- times: 24-hour, in benchlab's timezone (the one the server wrote the page in), named.
  const timeZone = (() => {
    try {
      new Intl.DateTimeFormat("en-GB", { timeZone: page.dataset.timeZone });
      return page.dataset.timeZone;
    } catch (error) {
      return "UTC";
    }
  })();
  const zoneLabel = page.dataset.timeZoneLabel || timeZone;
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone, year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23",
  });
  const fields = (date) => Object.fromEntries(parts.formatToParts(date).map((part) => [part.type, part.value]));
  const clock = (date) => { const f = fields(date); return `${f.hour}:${f.minute}:${f.second}`; };
  const stamp = (date) => { const f = fields(date); return `${f.year}-${f.month}-${f.day} ${clock(date)} ${zoneLabel}`; };
  const duration = window.benchlabUnits.duration;  // static/js/units.js

  // ---- the checkpoints of the measured window, from PostgreSQL's log: a dashed line where each
  // began, on every chart (they share the x axis), named in the legend and listed below the
  // throughput chart; while the run runs, as the server logs them (a "checkpoint" event at its
  // start and again at its end, with how long it took).
  const CHECKPOINT_KINDS = {
    time: ["checkpoint (time)", "#6a3d9a", "timed"],
    wal: ["checkpoint (WAL)", "#c0392b", "requested by WAL"],
    other: ["checkpoint (other)", "#555555", "other"],
  };
  const checkpoints = new Map(); // by the second it began: a reattached run tells each one again
  const addCheckpoint = (event) => checkpoints.set(Number(event.second).toFixed(3), event);
  (data.checkpoints || []).forEach(addCheckpoint);
  const checkpointMarkers = () => [...checkpoints.values()].map((event) => {
    const [label, color] = CHECKPOINT_KINDS[event.kind] || CHECKPOINT_KINDS.other;
    return { x: event.second, label, color };
  });
  const SECONDS = new Intl.NumberFormat("en", { maximumFractionDigits: 1 });
  const LISTED = 12;
  const listCheckpoints = () => {
    const list = document.getElementById("checkpoint-list");
    if (!list) return;
    const events = [...checkpoints.values()].sort((a, b) => a.second - b.second);
    list.hidden = !events.length;
    const said = events.slice(0, LISTED).map((event) => {
      const kind = (CHECKPOINT_KINDS[event.kind] || CHECKPOINT_KINDS.other)[2];
      const unfinished = finished ? "still running when the results were collected" : "not complete yet";
      const took = event.duration_s == null ? unfinished : `took ${SECONDS.format(event.duration_s)} s`;
      return `second ${SECONDS.format(event.second)} (${kind}, ${took})`;
    });
    const more = events.length > LISTED ? `, and ${events.length - LISTED} more` : "";
    list.textContent = `Checkpoints marked (PostgreSQL's log): ${said.join("; ")}${more}.`;
  };
  listCheckpoints();

  // ---- charts
  // The warm-up band's label: inside the band when it fits, else just right of its end line.
  const warmupLabel = {
    id: "warmupLabel",
    afterDatasetsDraw(chart, args, options) {
      if (!options.until) return;
      const { ctx, chartArea, scales } = chart;
      const end = Math.min(scales.x.getPixelForValue(options.until), chartArea.right);
      if (end <= chartArea.left) return;
      ctx.save();
      ctx.font = "11px system-ui, sans-serif";
      const width = ctx.measureText(options.text).width;
      const inside = end - chartArea.left >= width + 10;
      const left = inside ? (chartArea.left + end - width) / 2 : end + 4;
      ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
      ctx.fillRect(left - 3, chartArea.top + 3, width + 6, 16);
      ctx.fillStyle = "#333";
      ctx.textBaseline = "top";
      ctx.fillText(options.text, left, chartArea.top + 6);
      ctx.restore();
    },
  };
  const band = {
    warmupShade: { spans: [{ until: warmup, line: "rgba(80, 80, 80, 0.7)" }] },
    warmupLabel: { until: warmup, text: `warm-up ${warmup} s: not in the statistics` },
  };
  // The band in the legend too (it toggles nothing: a click on it is ignored).
  const legend = {
    labels: {
      generateLabels: (chart) => {
        const items = Chart.defaults.plugins.legend.labels.generateLabels(chart);
        if (warmup) {
          items.push({ text: "warm-up (shaded)", fillStyle: "rgba(120, 120, 120, 0.15)", strokeStyle: "rgba(80, 80, 80, 0.7)", lineWidth: 1, hidden: false });
        }
        return [...items, ...markerLegendItems(chart.options.plugins.eventMarkers?.markers)];
      },
    },
    onClick: (event, item, legendBox) => {
      if (item.datasetIndex !== undefined) Chart.defaults.plugins.legend.onClick.call(legendBox, event, item, legendBox);
    },
  };
  // A line, named with its unit; a lone sample is drawn as a dot (a line needs two). A dot on the
  // plot's edge (a 1-second run's only sample, at its last second) and the dot a hover draws are
  // drawn whole: the lines may overflow the plot area by a dot's radius (the axis stays the run's
  // planned seconds).
  const DOT_ROOM = 6; // px: the hover dot's radius (4) and its border
  const line = (label, name, unit, axis, points) => ({
    label, name, unit, yAxisID: axis, data: points, borderWidth: 1.5, pointHitRadius: 4, clip: DOT_ROOM,
    pointRadius: (context) => (context.dataset.data.length < 2 ? 3 : 0),
  });
  const xAxis = (last) => ({
    type: "linear", min: 0, max: Math.max(total, last || 0), title: axisTitle(data.warmup_run ? "seconds since the measurement's pgbench started" : `seconds since ${data.driver || "pgbench"} started`),
    ticks: { precision: 0, includeBounds: false }, // no crowded label for the last odd second
  });
  // Tooltips anywhere along x (the shared options' interaction: index, not intersecting).
  const tooltip = {
    callbacks: {
      title: (items) => {
        const second = items[0].parsed.x;
        if (second <= warmup) return `second ${second} (warm-up)`;
        if (second > total) return `second ${second} (after pgbench ended)`; // iostat and vmstat run on a little
        return `second ${second} (measured second ${second - warmup} of ${data.duration_s})`;
      },
      label: (item) => `${item.dataset.name}: ${withUnit(item.parsed.y, item.dataset.unit)}`,
    },
  };
  const options = (scales) => ({
    animation: false,
    parsing: false,
    scales,
    plugins: { ...band, eventMarkers: { markers: checkpointMarkers() }, legend, tooltip },
  });
  const points = (xs, ys) => xs.map((x, i) => ({ x, y: ys[i] }));
  const tpsCanvas = document.getElementById("tps-chart"); // absent on an ended run with no sample
  const tpsChart = tpsCanvas && make(tpsCanvas, "line", {
    datasets: [
      line("throughput (tps)", "throughput", "tps", "tps", finished ? points(data.seconds, data.tps) : []),
      line("latency (ms)", "latency", "ms", "latency", finished ? points(data.seconds, data.latency_ms) : []),
    ],
  }, {
    options: options({
      x: xAxis(data.seconds.at(-1)),
      tps: valueAxis("tps", { position: "left", beginAtZero: true, grace: "10%", title: axisTitle("throughput (tps)") }),
      latency: valueAxis("ms", {
        position: "right", beginAtZero: true, grace: "10%", grid: { drawOnChartArea: false }, title: axisTitle("latency (ms)"),
      }),
    }),
    plugins: [warmupShade, warmupLabel, eventMarkers],
  });
  window.benchlabCharts = tpsChart ? { tps: tpsChart } : {};
  // sysbench: its per-second latency is its 95th percentile, and its queries per second a line of
  // their own (an axis of their own: a transaction of oltp_read_write is about 20 queries).
  const sysbench = data.driver === "sysbench";
  if (tpsChart && sysbench) {
    tpsChart.data.datasets[1].label = "latency, p95 (ms)";
    tpsChart.data.datasets[1].name = "latency p95";
    tpsChart.update("none");
  }
  // Added with the first qps there is: samples without one (pgbench's) draw no empty axis.
  const addQpsLine = () => {
    tpsChart.data.datasets.push({ ...line("queries (qps)", "queries", "qps", "qps", []), borderDash: [2, 2] });
    tpsChart.options.scales.qps = valueAxis("qps", {
      position: "left", beginAtZero: true, grace: "10%", grid: { drawOnChartArea: false }, title: axisTitle("queries (qps)"),
    });
    return tpsChart.data.datasets.at(-1);
  };
  if (tpsChart && finished && data.qps) {
    addQpsLine().data = points(data.seconds, data.qps);
    tpsChart.update("none");
  }
  const qpsLine = () => tpsChart.data.datasets.find((dataset) => dataset.name === "queries") || addQpsLine();

  // The separate warm-up run before the measurement (its own pgbench, its own clients): its seconds
  // on a chart of their own above the measurement's, never among the measured ones.
  const warmupRun = data.warmup_run;
  const warmupCanvas = document.getElementById("warmup-chart");
  const warmupLabelled = `warm-up run, ${warmupRun?.clients} clients`;
  const warmupChart = warmupCanvas && make(warmupCanvas, "line", {
    datasets: [
      line(`${warmupLabelled} (tps)`, `${warmupLabelled}: throughput`, "tps", "tps", points(warmupRun.seconds, warmupRun.tps)),
      line(`${warmupLabelled} (latency, ms)`, `${warmupLabelled}: latency`, "ms", "latency", points(warmupRun.seconds, warmupRun.latency_ms)),
    ],
  }, {
    options: {
      animation: false, parsing: false,
      scales: {
        x: { type: "linear", min: 0, max: warmupRun.duration_s, title: axisTitle("seconds since the warm-up run started"), ticks: { precision: 0 } },
        tps: valueAxis("tps", { position: "left", beginAtZero: true, grace: "10%", title: axisTitle("throughput (tps)") }),
        latency: valueAxis("ms", { position: "right", beginAtZero: true, grace: "10%", grid: { drawOnChartArea: false }, title: axisTitle("latency (ms)") }),
      },
      plugins: { tooltip: { callbacks: {
        title: (items) => `warm-up second ${items[0].parsed.x} of ${warmupRun.duration_s} (${warmupRun.clients} clients)`,
        label: (item) => `${item.dataset.name}: ${withUnit(item.parsed.y, item.dataset.unit)}`,
      } } },
    },
  });
  const warmupSeen = new Set(warmupRun ? warmupRun.seconds : []);
  let warmupSecond = null;
  const addWarmupSample = (sample) => {
    if (!warmupChart || warmupSeen.has(sample.second)) return;
    warmupSeen.add(sample.second);
    warmupSecond = Math.max(warmupSecond ?? 0, sample.second);
    warmupChart.data.datasets[0].data.push({ x: sample.second, y: sample.tps });
    warmupChart.data.datasets[1].data.push({ x: sample.second, y: sample.latency_ms });
    warmupChart.update("none");
  };

  // Several client hosts: a dashed throughput line for each beside their total (the solid one).
  const clientNames = data.client_names || [];
  const CLIENT_COLOURS = ["#1b7f5f", "#b35900", "#7b3fa0", "#a61e4d", "#4a6d00", "#00638a", "#8a5a00", "#5c5c5c"];
  const clientLine = (name, points) => {
    const colour = CLIENT_COLOURS[clientNames.indexOf(name) % CLIENT_COLOURS.length];
    return {
      ...line(`${name} (tps)`, `client ${name}`, "tps", "tps", points),
      borderDash: [5, 3], borderColor: colour, backgroundColor: colour, client: name,
    };
  };
  if (tpsChart && clientNames.length > 1) {
    tpsChart.data.datasets[0].label = `all ${clientNames.length} client hosts (tps)`;
    for (const name of clientNames) {
      const series = (data.clients || []).find((client) => client.name === name);
      tpsChart.data.datasets.push(clientLine(name, finished && series ? points(series.seconds, series.tps) : []));
    }
    tpsChart.update("none");
  }
  const clientSeen = new Set();
  const addClientSample = (sample) => {
    const key = `${sample.client} ${sample.second}`;
    if (clientSeen.has(key)) return;
    clientSeen.add(key);
    const dataset = tpsChart.data.datasets.find((d) => d.client === sample.client);
    if (dataset) dataset.data.push({ x: sample.second, y: sample.tps });
  };

  // iostat and vmstat, a sample a second from just before pgbench started. `axes` names each y
  // axis (id → [title, unit]) and `lines` puts each series on one of them: a percentage never
  // shares a scale with a rate or a time.
  const seriesChart = (id, series, axes, lines) => {
    const canvas = document.getElementById(id);
    if (!canvas) return;
    const datasets = Object.entries(lines).map(([key, [name, axis]]) => {
      const unit = axes[axis][1];
      const values = (series[key] || []).map((y, x) => ({ x: x + 1, y }));
      return line(`${name} (${unit})`, name, unit, axis, values);
    });
    const longest = Math.max(0, ...datasets.map((dataset) => dataset.data.length));
    const scales = { x: xAxis(longest) };
    Object.entries(axes).forEach(([axis, [title, unit]], index) => {
      scales[axis] = valueAxis(unit, {
        position: index ? "right" : "left", beginAtZero: true, grace: "10%", title: axisTitle(title),
        grid: { drawOnChartArea: index === 0 }, ...(unit === "%" ? { max: 100 } : {}),
      });
    });
    window.benchlabCharts[id] = make(canvas, "line", { datasets }, { options: options(scales), plugins: [warmupShade, warmupLabel, eventMarkers] });
  };
  seriesChart("iostat-util-chart", data.iostat, { pct: ["utilisation (%)", "%"], ms: ["await (ms)", "ms"] }, {
    util_pct: ["utilisation", "pct"], r_await_ms: ["read await", "ms"], w_await_ms: ["write await", "ms"],
  });
  seriesChart("iostat-iops-chart", data.iostat, { iops: ["I/O requests per second (IOPS)", "IOPS"] }, {
    r_per_s: ["reads", "iops"], w_per_s: ["writes", "iops"],
  });
  seriesChart("vmstat-chart", data.vmstat, { pct: ["CPU time (%)", "%"] }, {
    us: ["user", "pct"], sy: ["system", "pct"], wa: ["iowait", "pct"],
  });
  // Latency second by second: percentiles from the per-transaction log, or (aggregate log only)
  // each interval's min, mean and max; late and skipped transactions on their own axis.
  const latencyAxes = { ms: ["latency (ms)", "ms"], n: ["transactions", "transactions"] };
  seriesChart("latency-chart", data.latency || {}, latencyAxes, data.latency_kind === "percentiles" ? {
    p50_ms: ["p50", "ms"], p95_ms: ["p95", "ms"], p99_ms: ["p99", "ms"], late: ["late", "n"], skipped: ["skipped", "n"],
  } : {
    min_ms: ["min", "ms"], mean_ms: ["mean", "ms"], max_ms: ["max", "ms"], skipped: ["skipped", "n"],
  });

  // A finished run's log opens at its newest lines, as the live one showed them.
  const storedLog = document.getElementById("run-log");
  storedLog?.addEventListener("toggle", () => {
    storedLog.querySelectorAll("pre").forEach((pre) => { pre.scrollTop = pre.scrollHeight; });
  });

  if (finished) return;

  // ---- a queued run: what it waits for, asked again now and then (runs ahead end, hosts free up).
  const wait = document.getElementById("run-wait");
  const waitText = document.getElementById("run-wait-text");
  const runUrl = (id) => page.dataset.events.replace(/\/\d+\/events$/, `/${id}/`);
  // A wait's text with each run it names linked (the one on the host, the one ahead of it), as
  // the page's template does it (the link_runs filter).
  const appendLinked = (element, text) => {
    let position = 0;
    for (const mention of text.matchAll(/\brun (\d+)\b/g)) {
      element.append(text.slice(position, mention.index));
      const link = document.createElement("a");
      link.href = runUrl(mention[1]);
      link.textContent = mention[0];
      element.append(link);
      position = mention.index + mention[0].length;
    }
    element.append(text.slice(position));
  };
  const showWaits = (waits) => {
    waitText.replaceChildren();
    if (!waits.length) waitText.textContent = "Its turn has come: waiting for a worker to start it.";
    waits.forEach((text, index) => {
      if (index) waitText.append(" · ");
      appendLinked(waitText, text);
    });
  };
  let waitTimer = null;
  const refreshWait = async () => {
    const answer = await fetch(wait.dataset.url, { headers: { Accept: "application/json" } });
    if (!answer.ok) return;
    const body = await answer.json();
    if (body.state === "queued") showWaits(body.waits);
  };
  if (wait && !wait.hidden) waitTimer = setInterval(refreshWait, 3000);

  // ---- a running run: where it is ("measuring, second 16 of 30") and when pgbench ends.
  const position = document.getElementById("run-position");
  const positionText = document.getElementById("run-position-text");
  const eta = document.getElementById("run-eta");
  const took = document.getElementById("run-took");
  const tookFact = document.getElementById("run-took-fact"); // hidden until the run starts
  const measuredPlan = warmup ? `${warmup} s warm-up + ${data.duration_s} s` : `${data.duration_s} s`;
  let state = null, stateLabel = "", lastSecond = null;
  let pgbenchEnds = position.dataset.ends ? new Date(position.dataset.ends) : null;
  const showPosition = () => {
    const running = ["warming_up", "measuring"].includes(state);
    if (state === "queued" || state === null) return;
    wait.hidden = true;
    position.hidden = false;
    if (!running) {
      const early = ["preparing_storage", "initializing_database"].includes(state);
      positionText.textContent = early ? `${stateLabel}; then pgbench runs ${measuredPlan}` : `${stateLabel}; pgbench has ended`;
      eta.textContent = "";
      return;
    }
    if (lastSecond === null && warmupRun && state === "warming_up") {
      const at = warmupSecond === null ? "starting" : `second ${warmupSecond} of ${warmupRun.duration_s}`;
      positionText.textContent = `warm-up run (${warmupRun.clients} clients), ${at}; then the measurement`;
    } else if (lastSecond === null) positionText.textContent = `${stateLabel}, waiting for pgbench's first second`;
    else if (lastSecond <= warmup) positionText.textContent = `warming up, second ${lastSecond} of ${warmup}`;
    else positionText.textContent = `measuring, second ${Math.min(lastSecond - warmup, data.duration_s)} of ${data.duration_s}`;
    const left = lastSecond === null ? "" : `, in about ${duration(total - lastSecond)}`;
    eta.textContent = pgbenchEnds ? ` · pgbench ends ≈ ${stamp(pgbenchEnds)}${left}; then results are collected` : "";
  };
  // "Running for": the server's figure when the page was made, counted on by this page's clock.
  const loadedAt = performance.now();
  let tookBase = took.dataset.seconds ? Number(took.dataset.seconds) : null;
  const showTook = () => {
    if (tookBase === null) return;
    tookFact.hidden = false;
    took.textContent = duration(tookBase + (performance.now() - loadedAt) / 1000);
  };
  setInterval(showTook, 1000);

  if (!window.EventSource) return;
  const seen = new Set();
  const count = document.getElementById("sample-count");
  const runState = document.getElementById("run-state");
  const steps = document.getElementById("steps");
  steps.innerHTML = ""; // rebuilt from the replayed events
  // Live events are best-effort (a Redis restart loses those not yet read); the samples are in
  // PostgreSQL regardless. After the stream broke, the seconds it missed come from there.
  const fillGap = async () => {
    const answer = await fetch(page.dataset.samples, { headers: { Accept: "application/json" } });
    if (!answer.ok) return;
    const stored = await answer.json();
    stored.seconds.forEach((second, i) => addSample({ second, tps: stored.tps[i], latency_ms: stored.latency_ms[i], qps: stored.qps?.[i] }));
    for (const client of stored.clients || []) {
      client.seconds.forEach((second, i) => addClientSample({ client: client.name, second, tps: client.tps[i] }));
    }
    drawSamples();
  };
  const source = window.benchlabLive.follow(page.dataset.events, () => fillGap());
  // Whether it is new (the stream replays from the start; a reconnect may bring it again).
  const addSample = (sample) => {
    if (seen.has(sample.second)) return false;
    seen.add(sample.second);
    tpsChart.data.datasets[0].data.push({ x: sample.second, y: sample.tps });
    tpsChart.data.datasets[1].data.push({ x: sample.second, y: sample.latency_ms });
    if (sample.qps != null) qpsLine().data.push({ x: sample.second, y: sample.qps });
    lastSecond = Math.max(lastSecond ?? 0, sample.second);
    return true;
  };
  const drawSamples = () => {
    for (const dataset of tpsChart.data.datasets) dataset.data.sort((a, b) => a.x - b.x);
    tpsChart.options.scales.x.max = Math.max(total, lastSecond ?? 0);
    tpsChart.update("none");
    const of = `${total} ${total === 1 ? "second" : "seconds"}`;
    count.textContent = `${seen.size} of ${of}${warmup ? ` (the first ${warmup} s are the warm-up, shaded)` : ""}`;
    showPosition();
  };
  source.addEventListener("sample", (message) => {
    const sample = JSON.parse(message.data);
    if (addSample(sample)) appendLog(progressLine(sample));
    drawSamples();
  });
  source.addEventListener("warmup_sample", (message) => {
    const sample = JSON.parse(message.data);
    addWarmupSample(sample);
    appendLog(`warm-up ${progressLine(sample)}`);
    showPosition();
  });
  source.addEventListener("client_sample", (message) => {
    addClientSample(JSON.parse(message.data));
    drawSamples();
  });
  source.addEventListener("checkpoint", (message) => {
    addCheckpoint(JSON.parse(message.data));
    const markers = checkpointMarkers();
    for (const chart of Object.values(window.benchlabCharts)) {
      chart.options.plugins.eventMarkers.markers = markers;
      chart.update("none");
    }
    listCheckpoints();
  });

  // ---- the log: follows its newest line unless the reader scrolled up (static/js/job_detail.js)
  const addToLog = window.benchlabJob.followLog(500, 5000); // a reader's place is not pulled away while they read
  // A line at the end.
  function appendLog(text) {
    addToLog(`${text}\n`);
  }
  // pgbench's progress lines reach the page as samples only (runs/bench/services/observer.py: the
  // stream keeps one copy); the log shows each as pgbench printed it, so it follows the measurement.
  function progressLine(sample) {
    const latency = sample.latency_ms == null ? "" : `, lat ${sample.latency_ms.toFixed(3)} ms`;
    return `progress: ${sample.second} s, ${sample.tps.toFixed(1)} tps${latency}`;
  }
  source.addEventListener("log", (message) => appendLog(JSON.parse(message.data).line));

  source.addEventListener("state", (message) => {
    const event = JSON.parse(message.data);
    const at = new Date(event.at);
    state = event.state;
    stateLabel = event.label;
    runState.textContent = event.label;
    runState.className = `state state-${event.state}`;
    const item = document.createElement("li");
    item.className = `step-${event.state}`;
    const time = document.createElement("time");
    if (!Number.isNaN(at.getTime())) {
      time.dateTime = event.at;
      time.title = stamp(at);
      time.textContent = clock(at);
    }
    item.append(`${event.label} `, time);
    if (event.note) {
      // Why, when the state does not say it (sent back to queued: a host did not answer).
      const note = document.createElement("span");
      note.className = "step-note";
      note.textContent = ` (${event.note})`;
      item.append(note);
    }
    steps.appendChild(item);
    if (["warming_up", "measuring"].includes(state) && !pgbenchEnds && !Number.isNaN(at.getTime())) {
      // pgbench started with this step (the warm-up run's first, then the measurement's).
      pgbenchEnds = new Date(at.getTime() + (total + (warmupRun ? warmupRun.duration_s : 0)) * 1000);
    }
    if (state !== "queued" && waitTimer !== null) {
      clearInterval(waitTimer);
      waitTimer = null;
    }
    if (state !== "queued" && tookBase === null) {
      // It started while this page was open: from now on it counts from here.
      tookBase = -(performance.now() - loadedAt) / 1000;
      if (!Number.isNaN(at.getTime())) document.getElementById("run-started").textContent = stamp(at);
      showTook();
    }
    showPosition();
    if (["done", "failed", "cancelled"].includes(event.state)) {
      source.close();
      setTimeout(() => window.location.reload(), 500); // the results page
    }
  });
})();
