// The device page's history: its fio figures over time, one chart per unit (MB/s, IOPS and ms
// differ by orders of magnitude), from the data the page embeds (baseline_selectors.device_chart),
// and its SMART/NVMe health over time (inventory selectors.device_health).
(function () {
  "use strict";
  if (!window.Chart) return;
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"];
  const when = (at) => (at ? new Date(at).toLocaleString("en-GB", { dateStyle: "short", timeStyle: "short" }) : "");
  // One line chart with the page's look; `scales` says its axes.
  const lineChart = (canvas, labels, datasets, scales) =>
    new Chart(canvas, {
      type: "line",
      data: { labels, datasets },
      options: {
        maintainAspectRatio: false,
        animation: false,
        interaction: { mode: "index", intersect: false },
        plugins: { legend: { position: "bottom", labels: { boxWidth: 12, font: { size: 11 } } } },
        scales,
      },
    });
  const line = (label, values, colour, extra) => ({
    label, data: values, borderColor: colour, backgroundColor: colour, pointRadius: 4, spanGaps: true, ...extra,
  });

  const fioHolder = document.getElementById("device-chart-data");
  if (fioHolder) {
    const data = JSON.parse(fioHolder.textContent);
    const labels = data.points.map((point) => [`#${point.id}`, when(point.at)]);
    const label = Object.fromEntries(data.figures.map((figure) => [figure.key, figure.label]));
    const draw = (id, keys, unit, logarithmic) => {
      const canvas = document.getElementById(id);
      if (!canvas) return;
      const datasets = keys.map((key, index) => line(label[key], data.points.map((point) => point[key]), PALETTE[index % PALETTE.length]));
      lineChart(canvas, labels, datasets, {
        y: { type: logarithmic ? "logarithmic" : "linear", title: { display: true, text: unit }, beginAtZero: !logarithmic },
        x: { title: { display: true, text: "fio baseline, when it finished" } },
      });
    };
    draw("bandwidth-chart", ["seq_read_mb_s", "seq_write_mb_s"], "MB/s", false);
    draw("iops-chart", ["rand_read_iops_qd1", "rand_read_iops_qd32", "rand_write_iops_qd1", "rand_write_iops_qd32"], "IOPS", true);
    draw("latency-chart", ["read_lat_p50_ms", "read_lat_p99_ms"], "ms", true);
  }

  // Wear and media errors on the left axis, terabytes written on the right, a point per reading.
  const healthHolder = document.getElementById("device-health-data");
  const healthCanvas = document.getElementById("health-chart");
  if (healthHolder && healthCanvas) {
    const points = JSON.parse(healthHolder.textContent).points;
    const values = (key) => points.map((point) => point[key]);
    lineChart(healthCanvas, points.map((point) => when(point.at)), [
      line("wear % used", values("wear_pct_used"), PALETTE[3], { yAxisID: "y" }),
      line("media errors", values("media_errors"), PALETTE[1], { yAxisID: "y" }),
      line("TB written", values("tb_written"), PALETTE[0], { yAxisID: "tb" }),
    ], {
      y: { beginAtZero: true, suggestedMax: 10, title: { display: true, text: "% used · errors" } },
      tb: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, title: { display: true, text: "TB written" } },
      x: { title: { display: true, text: "health reading" } },
    });
  }
})();
