// The device page's fio history: its main figures over time, one chart per unit (MB/s, IOPS and
// ms differ by orders of magnitude), from the data the page embeds (baseline_selectors.device_chart).
(function () {
  "use strict";
  const holder = document.getElementById("device-chart-data");
  if (!holder || !window.Chart) return;
  const data = JSON.parse(holder.textContent);
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"];
  const labels = data.points.map((point) => {
    const at = point.at ? new Date(point.at) : null;
    const when = at ? at.toLocaleString("en-GB", { dateStyle: "short", timeStyle: "short" }) : "";
    return [`#${point.id}`, when];
  });
  const label = Object.fromEntries(data.figures.map((figure) => [figure.key, figure.label]));
  const draw = (id, keys, unit, logarithmic) => {
    const canvas = document.getElementById(id);
    if (!canvas) return;
    new Chart(canvas, {
      type: "line",
      data: {
        labels,
        datasets: keys.map((key, index) => ({
          label: label[key],
          data: data.points.map((point) => point[key]),
          borderColor: PALETTE[index % PALETTE.length],
          backgroundColor: PALETTE[index % PALETTE.length],
          pointRadius: 4,
          spanGaps: true,
        })),
      },
      options: {
        maintainAspectRatio: false,
        animation: false,
        interaction: { mode: "index", intersect: false },
        plugins: { legend: { position: "bottom", labels: { boxWidth: 12, font: { size: 11 } } } },
        scales: {
          y: { type: logarithmic ? "logarithmic" : "linear", title: { display: true, text: unit }, beginAtZero: !logarithmic },
          x: { title: { display: true, text: "fio baseline, when it finished" } },
        },
      },
    });
  };
  draw("bandwidth-chart", ["seq_read_mb_s", "seq_write_mb_s"], "MB/s", false);
  draw("iops-chart", ["rand_read_iops_qd1", "rand_read_iops_qd32", "rand_write_iops_qd1", "rand_write_iops_qd32"], "IOPS", true);
  draw("latency-chart", ["read_lat_p50_ms", "read_lat_p99_ms"], "ms", true);
})();
