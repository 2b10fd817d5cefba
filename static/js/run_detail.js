// The run page: the tps/latency chart (warm-up shaded by charts.js's plugin), and while the run
// runs, live updates from its event stream: every sample once (the stream replays from the
// start), the state and the steps, and the log tail.
(function () {
  const page = document.getElementById("run-page");
  const data = JSON.parse(document.getElementById("chart-data").textContent);
  const finished = page.dataset.finished === "true";

  const points = (xs, ys) => xs.map((x, i) => ({ x, y: ys[i] }));
  const tpsChart = new Chart(document.getElementById("tps-chart"), {
    type: "line",
    data: {
      datasets: [
        { label: "tps", data: finished ? points(data.seconds, data.tps) : [], yAxisID: "tps", borderWidth: 1.5, pointRadius: 0 },
        { label: "latency (ms)", data: finished ? points(data.seconds, data.latency_ms) : [], yAxisID: "latency", borderWidth: 1, pointRadius: 0 },
      ],
    },
    options: {
      animation: false,
      parsing: false,
      maintainAspectRatio: false,  // fill the .chart box, whatever its width
      scales: {
        x: { type: "linear", title: { display: true, text: "seconds" } },
        tps: { position: "left", beginAtZero: true, title: { display: true, text: "tps" } },
        latency: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, title: { display: true, text: "ms" } },
      },
      plugins: { warmupShade: { spans: [{ until: data.warmup_s }] } },
    },
    plugins: [BenchlabCharts.warmupShade],
  });
  window.benchlabCharts = { tps: tpsChart };

  // One line per series; `axes` names each y axis (id → title) and `lines` puts each series on
  // one of them, so a percentage never shares a scale with a rate.
  const seriesChart = (id, series, axes, lines) => {
    const canvas = document.getElementById(id);
    if (!canvas) return;
    const datasets = Object.entries(lines).map(([key, [label, axis]]) => ({
      label, yAxisID: axis, data: (series[key] || []).map((y, x) => ({ x: x + 1, y })), borderWidth: 1, pointRadius: 0,
    }));
    const scales = { x: { type: "linear", title: { display: true, text: "seconds" } } };
    Object.entries(axes).forEach(([axis, title], index) => {
      scales[axis] = {
        position: index ? "right" : "left", beginAtZero: true, title: { display: true, text: title },
        grid: { drawOnChartArea: index === 0 }, ...(title === "%" ? { max: 100 } : {}),
      };
    });
    new Chart(canvas, { type: "line", data: { datasets }, options: { animation: false, parsing: false, maintainAspectRatio: false, scales } });
  };
  seriesChart("iostat-util-chart", data.iostat, { pct: "%", ms: "ms" }, {
    util_pct: ["util %", "pct"], r_await_ms: ["read await (ms)", "ms"], w_await_ms: ["write await (ms)", "ms"],
  });
  seriesChart("iostat-iops-chart", data.iostat, { iops: "per second" }, {
    r_per_s: ["reads/s", "iops"], w_per_s: ["writes/s", "iops"],
  });
  seriesChart("vmstat-chart", data.vmstat, { pct: "%" }, {
    us: ["user %", "pct"], sy: ["system %", "pct"], wa: ["iowait %", "pct"],
  });

  // A queued run's "waits for" line changes as the runs ahead of it end: ask again now and then.
  const wait = document.getElementById("run-wait");
  if (wait) {
    const refreshWait = async () => {
      const answer = await fetch(wait.dataset.url, { headers: { Accept: "application/json" } });
      if (!answer.ok) return;
      const body = await answer.json();
      if (body.state !== "queued") { wait.remove(); clearInterval(timer); return; }
      wait.textContent = body.waits.length
        ? `Waits for: ${body.waits.join(" · ")}`
        : "Its turn has come: waiting for a worker to start it.";
    };
    const timer = setInterval(refreshWait, 3000);
  }

  if (finished || !window.EventSource) return;
  const seen = new Set();
  const count = document.getElementById("sample-count");
  const log = document.getElementById("log");
  const state = document.getElementById("run-state");
  const steps = document.getElementById("steps");
  steps.innerHTML = "";  // rebuilt from the replayed events
  const source = new EventSource(page.dataset.events);
  const addSample = (sample) => {
    if (seen.has(sample.second)) return;
    seen.add(sample.second);
    tpsChart.data.datasets[0].data.push({ x: sample.second, y: sample.tps });
    tpsChart.data.datasets[1].data.push({ x: sample.second, y: sample.latency_ms });
  };
  const drawSamples = () => {
    for (const dataset of tpsChart.data.datasets) dataset.data.sort((a, b) => a.x - b.x);
    tpsChart.update("none");
    count.textContent = `${seen.size} samples`;
  };
  source.addEventListener("sample", (message) => {
    addSample(JSON.parse(message.data));
    drawSamples();
  });
  // Live events are best-effort (a Redis restart loses those not yet read); the samples are in
  // PostgreSQL regardless. After the stream broke, the seconds it missed come from there.
  let broken = false;
  source.addEventListener("error", () => { broken = true; });
  source.addEventListener("open", async () => {
    if (!broken) return;
    broken = false;
    const answer = await fetch(page.dataset.samples, { headers: { Accept: "application/json" } });
    if (!answer.ok) return;
    const stored = await answer.json();
    stored.seconds.forEach((second, i) => addSample({ second, tps: stored.tps[i], latency_ms: stored.latency_ms[i] }));
    drawSamples();
  });
  source.addEventListener("log", (message) => {
    const lines = (log.textContent + JSON.parse(message.data).line + "\n").split("\n");
    log.textContent = lines.slice(-200).join("\n");
  });
  source.addEventListener("state", (message) => {
    const event = JSON.parse(message.data);
    state.textContent = event.label;
    state.className = `state state-${event.state}`;
    const item = document.createElement("li");
    item.className = `step-${event.state}`;
    item.textContent = `${event.label} ${event.at.substring(11, 19)}`;
    steps.appendChild(item);
    if (["done", "failed", "cancelled"].includes(event.state)) {
      source.close();
      setTimeout(() => window.location.reload(), 500);  // the results page
    }
  });
})();
