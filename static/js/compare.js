// The comparison's charts, drawn from the page's data endpoint (#compare-charts data-url; the JSON
// is described in runs/compare/selectors/comparison.py's comparison_data): per metric the group means with 95 % CI
// and every repetition, and box plots of the repetitions; small multiples per facet value; the
// shown runs' per-second tps and latency with their warm-ups shaded; latency percentiles; iostat
// and vmstat. Groups keep one colour on every chart; the baseline is outlined and labelled.
// In print mode (data-print="true") every chart becomes an <img> once drawn, so the browser's
// print to PDF holds pictures; either way body[data-charts-ready="true"] says all are drawn.
(function () {
  const root = document.getElementById("compare-charts");
  if (!root) return;
  const print = root.dataset.print === "true";
  const B = window.BenchlabCharts;
  const drawn = [];
  // On paper a chart is half a page wide (90 mm): 10 px lettering prints at about 7.5 pt, and
  // leaves the plot more of its height than the labels take.
  if (print) Chart.defaults.font.size = 10;

  const DIRECTIONS = { higher_is_faster: "higher is better", lower_is_faster: "lower is better", neutral: "" };
  const PERCENTILES = [["p50", "p50"], ["p90", "p90"], ["p95", "p95"], ["p99", "p99"], ["p999", "p99.9"]];

  // ---- Labels: a group's label has its fields joined by " · "; on an axis each goes on its own
  // line(s), so that ticks stay horizontal. Faceted groups leave the facet out of their label, so
  // it is added where groups of several facets share a chart.
  const groupFields = (group, withFacet) => [
    ...group.label.split(" · "),
    ...(withFacet && group.facet ? [group.facet] : []),
    ...(group.baseline ? ["(baseline)"] : []),
  ];
  const groupLines = (group, withFacet) => groupFields(group, withFacet).flatMap((text) => B.wrap(text, 16));
  const groupText = (group, withFacet) => groupFields(group, withFacet).join(" · ");
  const metricTitle = (metric) => (metric.label.includes(metric.unit) ? metric.label : `${metric.label} (${metric.unit})`);

  // A tooltip's title on a chart of groups: the group's label on one line (the axis's lines
  // would be joined with commas).
  const groupTitle = (groups, withFacet) => (items) => groupText(groups[items[0].dataIndex], withFacet);

  // A category axis of groups: the baseline's tick in bold, beside its "(baseline)" line.
  const groupAxis = (groups, title = "group") => ({
    title: B.axisTitle(title),
    ticks: {
      maxRotation: 0,
      autoSkip: false,
      font: (context) => ({ weight: groups[context.index]?.baseline ? "bold" : "normal" }),
    },
  });

  const { element, figure } = B;
  // A chart with nothing to show is replaced by a sentence saying so, not drawn empty.
  const nothing = (canvas, sentence) => canvas.closest("figure").replaceWith(element("p", "muted", sentence));
  const chart = (canvas, type, data, options = {}, plugins = []) => {
    const made = B.make(canvas, type, data, { options, plugins, print });
    drawn.push(made);
    return made;
  };

  // Clicking a repetition's dot opens its run, except on shared pages (no data-run-url): the
  // viewer has no account there. The dot under the pointer, not the whole group the index-mode
  // tooltip shows.
  const openRun = (event, _elements, target) => {
    const url = root.dataset.runUrl;
    const [hit] = target.getElementsAtEventForMode(event, "nearest", { intersect: true }, false);
    const run = hit && target.data.datasets[hit.datasetIndex].data[hit.index]?.run;
    if (url && run) window.location.href = url.replace(/0\/$/, `${run}/`);
  };

  // ---- (1) per metric: bars of the means with the 95 % CI as error bars, and the repetitions as
  // dots. The dots are one dataset per repetition number (each group's 1st, 2nd, ... run), so the
  // index-mode tooltip of a group lists that group's own runs; they are spread a little sideways
  // so that equal values stay visible.
  // Facet panels pass `tickLines`, the most lines any panel's labels have: padded to it, every
  // panel's plot area starts at the same height, so that their bars line up.
  function meansChart(canvas, metric, groups, { withFacet = false, yMax, showLegend = true, tickLines = 0 } = {}) {
    const rows = new Map(metric.rows.map((row) => [row.group, row]));
    const rowOf = (group) => rows.get(group.index) || { summary: {}, values: [], failed: 0 };
    const most = Math.max(0, ...groups.map((group) => rowOf(group).values.length));
    const bars = {
      type: "barWithErrorBars",
      label: "mean with 95 % CI",
      data: groups.map((group) => {
        const { mean, ci_low: low, ci_high: high } = rowOf(group).summary;
        // No mean (no finished run has the metric): a gap. A null entry would break the error-bar plugin's parsing.
        if (mean === null || mean === undefined) return { y: null, yMin: null, yMax: null };
        // A CI past 0 (or 100 %) is drawn to that bound: a tps, a latency or a %util cannot go beyond it.
        const bound = (value) => B.withinBounds(value ?? mean, metric.unit);
        return { y: mean, yMin: bound(low), yMax: bound(high) };
      }),
      backgroundColor: groups.map((group) => B.colour(group.index, 0.55)),
      borderColor: groups.map((group) => (group.baseline ? B.BASELINE_BORDER : B.colour(group.index))),
      borderWidth: groups.map((group) => (group.baseline ? 3 : 1)),
      errorBarWhiskerSize: 14,
      pointStyle: "rect", // its legend swatch
      order: 2, // drawn under the dots
    };
    const dots = Array.from({ length: most }, (_, k) => ({
      type: "line",
      label: k ? `repetition ${k + 1}` : "each run",
      showLine: false,
      parsing: false,
      data: groups.map((group, position) => {
        const values = rowOf(group).values;
        const spread = (k - (values.length - 1) / 2) * 0.1;
        return values[k] ? { x: position + spread, y: values[k].value, run: values[k].run } : { x: position, y: null };
      }),
      pointRadius: 4, pointHoverRadius: 6, pointBackgroundColor: "#fff", pointBorderColor: "#222", pointBorderWidth: 1.5,
      backgroundColor: "#fff", borderColor: "#222", // its legend swatch: a dot like the others
      order: 1,
    }));
    const tooltip = {
      itemSort: (a, b) => a.datasetIndex - b.datasetIndex, // the mean first, then the runs
      callbacks: {
        title: groupTitle(groups, withFacet),
        label: (item) => {
          if (item.datasetIndex === 0) {
            const { mean, ci_low: low, ci_high: high } = rowOf(groups[item.dataIndex]).summary;
            const ci = low === null || low === undefined
              ? "no CI (too few runs)"
              : `95 % CI ${B.format(low)} – ${B.format(high)}`;
            return `mean ${B.withUnit(mean, metric.unit)}, ${ci}`;
          }
          return `run ${item.raw.run}: ${B.withUnit(item.raw.y, metric.unit)}`;
        },
        footer: (items) => {
          const row = rowOf(groups[items[0].dataIndex]);
          const lines = [`n = ${row.summary.n ?? 0} finished${row.failed ? `, ${row.failed} failed` : ""}`];
          if (row.comparison) lines.push(`vs baseline: ${row.comparison.text}`);
          return lines;
        },
      },
    };
    const labels = groups.map((group) => {
      const lines = groupLines(group, withFacet);
      return lines.concat(Array(Math.max(0, tickLines - lines.length)).fill(""));
    });
    return chart(canvas, "barWithErrorBars", { labels, datasets: [bars, ...dots] }, {
      scales: {
        x: groupAxis(groups),
        // Facet panels share one scale, from 0; a percentage's is 0–100.
        y: B.valueAxis(metric.unit, {
          beginAtZero: true, suggestedMax: yMax, max: metric.unit === "%" ? 100 : undefined,
          title: B.axisTitle(metricTitle(metric)),
        }),
      },
      plugins: {
        tooltip,
        // The repetition datasets show and hide together, under one legend entry.
        legend: {
          display: showLegend,
          labels: {
            usePointStyle: true,
            generateLabels: B.neutralLegendLabels,
            filter: (item) => item.datasetIndex <= 1,
            sort: (a, b) => a.datasetIndex - b.datasetIndex,
          },
          onClick: (event, item, legend) => {
            const target = legend.chart;
            const shown = !target.isDatasetVisible(item.datasetIndex);
            const which = item.datasetIndex === 0 ? [0] : target.data.datasets.map((_, index) => index).slice(1);
            which.forEach((index) => target.setDatasetVisibility(index, shown));
            target.update();
          },
        },
      },
      onClick: openRun,
    });
  }

  // ---- (2) per metric: box plots of the repetitions, each run drawn as a dot. Its one dataset
  // needs no legend: the caption says how to read it.
  function boxChart(canvas, metric, groups, withFacet) {
    const rows = new Map(metric.rows.map((row) => [row.group, row]));
    const dataset = {
      label: metric.label,
      data: groups.map((group) => (rows.get(group.index)?.values || []).map((value) => value.value)),
      backgroundColor: groups.map((group) => B.colour(group.index, 0.35)),
      borderColor: groups.map((group) => (group.baseline ? B.BASELINE_BORDER : B.colour(group.index))),
      borderWidth: groups.map((group) => (group.baseline ? 2 : 1)),
      itemRadius: 3, itemStyle: "circle", itemBackgroundColor: "rgba(20, 20, 20, 0.8)",
      meanRadius: 4, meanBackgroundColor: "#fff", meanBorderColor: "#222",
    };
    return chart(canvas, "boxplot", { labels: groups.map((group) => groupLines(group, withFacet)), datasets: [dataset] }, {
      // Not from zero: a box plot shows the spread, which a zero-based axis squashes flat.
      // Its grace stops at 0 (and 100 %): a spread near 0 does not draw an axis below it.
      scales: {
        x: groupAxis(groups),
        y: B.valueAxis(metric.unit, { beginAtZero: false, grace: "10%", title: B.axisTitle(metricTitle(metric)) }),
      },
      plugins: { legend: { display: false }, tooltip: { callbacks: { title: groupTitle(groups, withFacet) } } },
    });
  }

  function drawMetrics(data, groups, withFacet) {
    const parent = document.getElementById("metric-charts");
    // The printed report charts the headline metric only (the tables hold every metric's
    // numbers), so that it stays a few pages long.
    const charted = print ? data.metrics.slice(0, 1) : data.metrics;
    for (const metric of charted) {
      const block = element("section", "metric-charts");
      const heading = element("h4", "", metric.label);
      if (DIRECTIONS[metric.direction]) heading.append(" ", element("small", "", `(${DIRECTIONS[metric.direction]})`));
      const pair = element("div", "chart-pair");
      block.append(heading, pair);
      parent.append(block);
      const means = figure(pair,
        "bar: mean of the group; whiskers: its 95 % CI (drawn no lower than 0, no higher than 100 %); dots: each run",
        `${metric.label}: means with 95 % CI and each run`);
      meansChart(means, metric, groups, { withFacet });
      const boxes = figure(pair, "box: quartiles; whiskers: to 1.5 IQR; circle: mean; dots: each run",
        `${metric.label}: box plot of the runs`);
      boxChart(boxes, metric, groups, withFacet);
    }
  }

  // ---- (6) facets: one small panel per facet value, its groups' bars for the first metric
  // (steady-state tps when present), all panels on one y scale so that their bars compare.
  function drawFacets(data, groups) {
    const section = document.getElementById("facet-section");
    const metric = data.metrics.find((candidate) => candidate.key === "steady_tps") || data.metrics[0];
    if (!data.facets.length || !metric) return;
    section.hidden = false;
    const facetName = data.query?.facet || "facet";
    document.getElementById("facet-heading").textContent = `${metric.label}, one panel per ${facetName}`;
    const tops = metric.rows.flatMap((row) => [row.summary.ci_high, ...row.values.map((value) => value.value)]);
    const yMax = Math.max(...tops.filter((top) => top !== null && top !== undefined));
    const parent = document.getElementById("facet-charts");
    const tickLines = Math.max(...groups.map((group) => groupLines(group, false).length));
    for (const facet of data.facets) {
      const members = groups.filter((group) => group.facet === facet);
      const canvas = figure(parent, facet, `${metric.label} for ${facet}`);
      canvas.closest("figure").classList.add("facet");
      meansChart(canvas, metric, members, { yMax, showLegend: false, tickLines });
    }
  }

  // ---- (3) the shown runs' per-second tps and latency, overlaid, the warm-up shaded and its end
  // marked: one grey band when every run warmed up as long, else each run's in its group's
  // colour. A group's second shown run is dashed.
  function drawSeries(data, groupsByIndex) {
    const tpsCanvas = document.getElementById("series-tps-chart");
    const latencyCanvas = document.getElementById("series-latency-chart");
    if (!data.series.length) {
      tpsCanvas.closest(".chart-pair").replaceWith(element("p", "muted", "No finished run to show per second."));
      return;
    }
    const seen = new Map();
    const styles = data.series.map((series) => {
      const count = seen.get(series.group) || 0;
      seen.set(series.group, count + 1);
      const colour = B.colour(series.group);
      return { borderColor: colour, backgroundColor: colour, borderDash: count ? [6, 3] : [], borderWidth: 1.5 };
    });
    const label = (series) => (groupsByIndex.get(series.group)?.baseline ? `${series.label} (baseline)` : series.label);
    const oneWarmup = new Set(data.series.map((series) => series.warmup_s)).size === 1;
    const spans = oneWarmup
      ? [{ until: data.series[0].warmup_s, line: "rgba(80, 80, 80, 0.8)" }]
      : data.series.map((series, index) => ({
        until: series.warmup_s, datasetIndex: index, color: B.colour(series.group, 0.08), line: B.colour(series.group, 0.8),
      }));
    const lines = (canvas, key, title, unit) => chart(canvas, "line", {
      datasets: data.series.map((series, index) => ({
        label: label(series), parsing: false, pointRadius: 0, ...styles[index],
        data: series.seconds.map((second, at) => ({ x: second, y: series[key][at] })),
      })),
    }, {
      scales: {
        x: { type: "linear", title: B.axisTitle("time since the start (s)") },
        y: B.valueAxis(unit, { beginAtZero: true, title: B.axisTitle(title) }),
      },
      plugins: { warmupShade: { spans }, tooltip: { callbacks: { title: (items) => `second ${items[0].raw.x}` } } },
    }, [B.warmupShade]);
    lines(tpsCanvas, "tps", "throughput (tps)", "tps");
    lines(latencyCanvas, "latency_ms", "latency, mean per second (ms)", "ms");
  }

  // ---- (4) latency percentiles: per percentile, a bar per group.
  function drawPercentiles(data, groups, withFacet) {
    const canvas = document.getElementById("percentiles-chart");
    const rows = new Map(data.latency_percentiles.map((row) => [row.group, row]));
    if (!data.latency_percentiles.some((row) => PERCENTILES.some(([key]) => row[key] !== null))) {
      nothing(canvas, "No per-transaction latency log in these runs, so no percentiles.");
      return;
    }
    chart(canvas, "bar", {
      labels: PERCENTILES.map(([, name]) => name),
      datasets: groups.map((group) => ({
        label: groupText(group, withFacet),
        data: PERCENTILES.map(([key]) => rows.get(group.index)?.[key] ?? null),
        backgroundColor: B.colour(group.index, 0.7),
        borderColor: group.baseline ? B.BASELINE_BORDER : B.colour(group.index),
        borderWidth: group.baseline ? 2 : 1,
      })),
    }, {
      scales: {
        x: { title: B.axisTitle("percentile") },
        y: B.valueAxis("ms", { beginAtZero: true, title: B.axisTitle("latency (ms)") }),
      },
      plugins: { tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${B.withUnit(item.raw, "ms")}` } } },
    });
  }

  // ---- (5) iostat and vmstat side by side: per group, %util and await on one chart (two axes),
  // and CPU user/system/iowait stacked.
  function drawOs(data, groups, withFacet) {
    const rows = new Map(data.os.map((row) => [row.group, row]));
    const value = (group, source, key) => rows.get(group.index)?.[source]?.[key] ?? null;
    const labels = groups.map((group) => groupLines(group, withFacet));
    const bars = (source, key, label, colour, axis) => ({
      label, yAxisID: axis, data: groups.map((group) => value(group, source, key)),
      backgroundColor: colour, borderColor: colour, borderWidth: 1,
    });
    const has = (source) => data.os.some((row) => Object.values(row[source] || {}).some((v) => v !== null));
    const tooltip = (unitOf) => ({
      callbacks: {
        title: groupTitle(groups, withFacet),
        label: (item) => `${item.dataset.label}: ${B.withUnit(item.raw, unitOf(item))}`,
      },
    });

    // A bar chart of one OS source's series ([key, label, colour, axis]), or a sentence where
    // these runs measured none.
    const osChart = (source, series, scales, unitOf) => {
      const canvas = document.getElementById(`${source}-chart`);
      if (!has(source)) {
        nothing(canvas, `No ${source} measurements in these runs.`);
        return;
      }
      const datasets = series.map(([key, label, colour, axis]) => bars(source, key, label, colour, axis));
      chart(canvas, "bar", { labels, datasets }, { scales, plugins: { tooltip: tooltip(unitOf) } });
    };

    osChart("iostat", [
      ["util_pct", "%util", "rgba(78, 121, 167, 0.8)", "pct"],
      ["r_await_ms", "read await", "rgba(242, 142, 43, 0.8)", "ms"],
      ["w_await_ms", "write await", "rgba(225, 87, 89, 0.8)", "ms"],
    ], {
      x: groupAxis(groups),
      pct: B.valueAxis("%", { position: "left", beginAtZero: true, max: 100, title: B.axisTitle("device utilisation (%)") }),
      ms: B.valueAxis("ms", {
        position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, title: B.axisTitle("await (ms)"),
      }),
    }, (item) => (item.dataset.yAxisID === "pct" ? "%" : "ms"));

    osChart("vmstat", [
      ["us", "user", "rgba(78, 121, 167, 0.8)", "y"],
      ["sy", "system", "rgba(242, 142, 43, 0.8)", "y"],
      ["wa", "iowait", "rgba(225, 87, 89, 0.8)", "y"],
    ], {
      x: { ...groupAxis(groups), stacked: true },
      y: B.valueAxis("%", { stacked: true, beginAtZero: true, max: 100, title: B.axisTitle("CPU time (%)") }),
    }, () => "%");
  }

  async function fetchData() {
    const answer = await fetch(root.dataset.url, { headers: { Accept: "application/json" } });
    if (answer.ok) return answer.json();
    // A refused query answers 400 with what is wrong; say it rather than only the status.
    const reason = await answer.json().then((body) => body.error || body.detail || "", () => "");
    throw new Error(`the data request answered ${answer.status}${reason ? `: ${reason}` : ""}`);
  }

  function drawAll(data) {
    const groupsByIndex = new Map(data.groups.map((group) => [group.index, group]));
    const withFacet = data.facets.length > 0; // labels then need the facet to tell groups apart
    drawMetrics(data, data.groups, withFacet);
    drawFacets(data, data.groups);
    drawSeries(data, groupsByIndex);
    drawPercentiles(data, data.groups, withFacet);
    drawOs(data, data.groups, withFacet);
  }

  async function main() {
    const status = document.getElementById("charts-status");
    try {
      drawAll(await fetchData());
      await B.settled(drawn);
      if (print) await B.toImages(drawn);
    } catch (error) {
      status.textContent = `The charts could not be drawn: ${error.message}`;
      status.classList.add("error");
      root.setAttribute("aria-busy", "false");
      throw error; // on the console too, with its stack
    }
    status.hidden = true;
    root.setAttribute("aria-busy", "false");
    document.body.dataset.chartsReady = "true";
  }

  main();
})();
