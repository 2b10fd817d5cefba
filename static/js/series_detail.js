// A series' page: one chart per metric, the round means as a line over their repetitions' range
// (a band from the lowest to the highest), the change points as red dashed lines and the changes
// recorded on the hosts and devices as grey ones (charts.js's eventMarkers), each with its text.
(function () {
  const data = JSON.parse(document.getElementById("series-data").textContent);
  const { axisTitle, withUnit, eventMarkers, markerLegendItems, make, valueAxis, figure, colour } = window.BenchlabCharts;
  const parent = document.getElementById("series-figures");
  const CHANGE = "#c0392b";

  // ---- the rounds, each linked to its campaign and runs (a URL of id 0 from the page, its id put in).
  const table = document.getElementById("round-table");
  const url = (template, id) => template.replace(/\/0\/$/, `/${id}/`);
  const link = (template, id, text) => {
    const made = document.createElement("a");
    made.href = url(template, id);
    made.textContent = text;
    return made;
  };
  const started = new Intl.DateTimeFormat("en-GB", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" });
  for (const round of data.rounds) {
    const row = table.tBodies[0].insertRow();
    row.insertCell().textContent = round.number;
    row.insertCell().textContent = `${started.format(new Date(round.at))} UTC`;
    const of = row.insertCell();
    if (round.campaign) of.append(link(table.dataset.campaignUrl, round.campaign, `campaign ${round.campaign}`));
    else of.textContent = "a single run";
    const runs = row.insertCell();
    round.runs.forEach((id, i) => runs.append(...(i ? [", "] : []), link(table.dataset.runUrl, id, String(id))));
  }
  const DRIFT = "#555";

  for (const metric of data.metrics) {
    const at = (field) => metric.points.map((p, i) => ({ x: i + 1, y: p ? p[field] : null }));
    // A change point sits between two rounds; a drift event between the last round that saw the
    // old value and the first that saw the new.
    const markers = [
      ...metric.changes.map((c) => ({ x: c.after - 0.5, label: c.text, color: CHANGE, kindLabel: "change point" })),
      ...data.drift.map((d) => ({
        x: (d.before + d.after) / 2, label: d.text.split(/ (?:between|during) /)[0], color: DRIFT, kindLabel: "host or device changed",
      })),
    ];
    const caption = `${metric.label} per round` + (metric.reason ? ` (no change point searched: ${metric.reason})` : "");
    const canvas = figure(parent, caption);
    canvas.closest("figure").id = `series-chart-${metric.key}`;
    make(canvas, "line", {
      datasets: [
        { label: "lowest", data: at("min"), borderWidth: 0, pointRadius: 0, backgroundColor: colour(0, 0.18), fill: "+1" },
        { label: "highest", data: at("max"), borderWidth: 0, pointRadius: 0, fill: false },
        { label: "mean of the round", data: at("mean"), borderColor: colour(0), backgroundColor: colour(0),
          pointRadius: metric.points.length > 60 ? 0 : 2.5, borderWidth: 1.5, spanGaps: false },
      ],
    }, {
      plugins: [eventMarkers],
      options: {
        parsing: false,
        scales: {
          x: { type: "linear", min: 1, max: Math.max(metric.points.length, 2), title: axisTitle("round"),
               ticks: { precision: 0 } },
          y: valueAxis(metric.unit, { title: axisTitle(`${metric.label} (${metric.unit})`) }),
        },
        plugins: {
          eventMarkers: { markers },
          legend: { labels: {
            filter: (item) => item.text !== "highest",
            generateLabels: (chart) => [
              ...Chart.defaults.plugins.legend.labels.generateLabels(chart).map((item) =>
                item.text === "lowest" ? { ...item, text: "lowest to highest repetition" } : item),
              ...markerLegendItems(markers),
            ],
          } },
          tooltip: { callbacks: {
            title: (items) => `round ${items[0].parsed.x}`,
            label: (item) => `${item.dataset.label === "lowest" ? "lowest" : item.dataset.label}: ${withUnit(item.parsed.y, metric.unit)}`,
          } },
        },
      },
    });
  }
})();
