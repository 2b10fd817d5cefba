// Chart helpers shared by the run page and the comparison page: colours, number formats, axis
// titles, the warm-up shading plugin, chart figures made from data, and print mode's pictures.
// Loaded after Chart.js, before the page's own script; everything is on window.BenchlabCharts
// (no build step, so no modules).
(function () {
  // Tableau 10: distinguishable, also in greyscale print, and for the common colour blindnesses
  // better than Chart.js's defaults. Groups beyond ten repeat colours; their labels tell them apart.
  const PALETTE = [
    [78, 121, 167], [242, 142, 43], [89, 161, 79], [225, 87, 89], [118, 183, 178],
    [237, 201, 72], [176, 122, 161], [255, 157, 167], [156, 117, 95], [186, 176, 172],
  ];
  const BASELINE_BORDER = "#111";

  const colour = (index, alpha = 1) => {
    const [r, g, b] = PALETTE[index % PALETTE.length];
    return `rgba(${r}, ${g}, ${b}, ${alpha})`;
  };

  // Thousands keep every digit (a tps of 5206 is not "5210"); small numbers keep four significant
  // digits, so a 0.214 ms latency does not read as 0.
  const wholeFormat = new Intl.NumberFormat("en", { maximumFractionDigits: 0 });
  const smallFormat = new Intl.NumberFormat("en", { maximumSignificantDigits: 4 });
  const format = (value) => {
    if (value === null || value === undefined || Number.isNaN(value)) return "–";
    return Math.abs(value) >= 1000 ? wholeFormat.format(value) : smallFormat.format(value);
  };
  const withUnit = (value, unit) => (unit === "%" ? `${format(value)} %` : `${format(value)} ${unit}`);

  // Chart.js does not wrap labels, but draws an array as lines: long texts become arrays of lines
  // of about `width` characters, broken between words.
  const wrap = (text, width) => {
    const lines = [];
    for (const word of String(text).split(" ")) {
      const last = lines.length - 1;
      if (last >= 0 && lines[last].length + 1 + word.length <= width) lines[last] += ` ${word}`;
      else lines.push(word);
    }
    return lines;
  };

  // An axis title; a long one goes on two lines, broken before its parenthesis or after a comma,
  // so that a short chart does not cut it off.
  const axisTitle = (text) => {
    const cut = text.length > 26 ? Math.max(text.lastIndexOf(" ("), text.lastIndexOf(", ") + 1) : -1;
    const lines = cut > 0 ? [text.slice(0, cut).trim(), text.slice(cut).trim()] : text;
    return { display: true, text: lines, font: { weight: "bold" } };
  };

  // An axis of a quantity that is never below 0 (tps, latency, a count) nor, as a percentage
  // (%util, CPU time), above 100: whatever Chart.js's grace, a nice tick or an interval's whisker
  // would add, the scale stops there. `options` are the axis's other options (`max: 100` to show
  // a percentage's whole range).
  const valueAxis = (unit, options = {}) => {
    const ceiling = unit === "%" ? 100 : Infinity;
    return {
      ...options,
      afterBuildTicks: (scale) => {
        scale.ticks = scale.ticks.filter((tick) => tick.value >= 0 && tick.value <= ceiling);
        scale.min = Math.max(scale.min, 0);
        scale.max = Math.min(scale.max, ceiling);
      },
    };
  };
  // An interval's end drawn within the same bounds (the tables and tooltips keep the true figures).
  const withinBounds = (value, unit) =>
    value === null || value === undefined ? value : Math.min(Math.max(value, 0), unit === "%" ? 100 : Infinity);

  // Options every benchlab chart shares. In print mode nothing animates (the chart is turned into
  // an image once drawn) and the bitmap is drawn at twice the CSS size so it stays sharp on paper.
  const baseOptions = (print) => ({
    animation: print ? false : { duration: 300 },
    maintainAspectRatio: false, // fill the .chart box, whatever its width
    devicePixelRatio: print ? 2 : window.devicePixelRatio,
    interaction: { mode: "index", intersect: false },
    plugins: { legend: { position: "bottom", labels: { boxWidth: 14, boxHeight: 10, font: { size: 11 } } } },
  });

  // A dataset coloured per bar (one colour per group) would show its first bar's colour in the
  // legend, as if it were one group's: such datasets get a neutral swatch instead.
  const neutralLegendLabels = (chart) =>
    Chart.defaults.plugins.legend.labels.generateLabels(chart).map((item) => {
      const dataset = chart.data.datasets[item.datasetIndex];
      if (Array.isArray(dataset.backgroundColor)) {
        item.fillStyle = "rgba(120, 120, 120, 0.5)";
        item.strokeStyle = "rgba(80, 80, 80, 1)";
      }
      return item;
    });

  // Shades the warm-up (from the start to `until` seconds) of line charts with a linear x axis in
  // seconds, and marks where it ends. Spans come from the chart's options:
  // plugins.warmupShade.spans = [{ until, color?, datasetIndex? }]; a span tied to a dataset
  // disappears with it when the legend hides that dataset.
  const warmupShade = {
    id: "warmupShade",
    beforeDatasetsDraw(chart, args, options) {
      const { ctx, chartArea, scales } = chart;
      for (const span of options.spans || []) {
        if (!span.until) continue;
        if (span.datasetIndex !== undefined && !chart.isDatasetVisible(span.datasetIndex)) continue;
        const right = Math.min(scales.x.getPixelForValue(span.until), chartArea.right);
        if (right <= chartArea.left) continue;
        ctx.save();
        ctx.fillStyle = span.color || "rgba(120, 120, 120, 0.15)";
        ctx.fillRect(chartArea.left, chartArea.top, right - chartArea.left, chartArea.bottom - chartArea.top);
        if (span.line) {
          ctx.strokeStyle = span.line;
          ctx.setLineDash([4, 3]);
          ctx.beginPath();
          ctx.moveTo(right, chartArea.top);
          ctx.lineTo(right, chartArea.bottom);
          ctx.stroke();
        }
        ctx.restore();
      }
    },
  };

  // Marks moments on line charts with a linear x axis in seconds: a dashed vertical line at each
  // marker's x, labelled at the top of the plot. Markers come from the chart's options:
  // plugins.eventMarkers.markers = [{ x, label, color }]; one outside the axis is not drawn. A label
  // that would cover another goes a row lower (three rows), else only its line is drawn: the
  // legend names the kinds (markerLegendItems).
  const MARKER_ROWS = 3;
  const eventMarkers = {
    id: "eventMarkers",
    afterDatasetsDraw(chart, args, options) {
      const { ctx, chartArea, scales } = chart;
      const markers = [...(options.markers || [])].sort((a, b) => a.x - b.x);
      if (!markers.length) return;
      ctx.save();
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "top";
      const rowEnds = Array(MARKER_ROWS).fill(-Infinity); // where each row's last label ends (px)
      for (const marker of markers) {
        const x = scales.x.getPixelForValue(marker.x);
        if (!(x >= chartArea.left && x <= chartArea.right)) continue;
        ctx.strokeStyle = marker.color;
        ctx.lineWidth = 1.5;
        ctx.setLineDash([5, 3]);
        ctx.beginPath();
        ctx.moveTo(x, chartArea.top);
        ctx.lineTo(x, chartArea.bottom);
        ctx.stroke();
        const width = ctx.measureText(marker.label).width;
        const left = x + 3 + width <= chartArea.right ? x + 3 : x - 3 - width;
        const row = rowEnds.findIndex((end) => end + 4 <= left);
        if (row < 0) continue;
        rowEnds[row] = left + width;
        const top = chartArea.top + 22 + row * 16; // below the warm-up label's place
        ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
        ctx.fillRect(left - 2, top - 2, width + 4, 15);
        ctx.fillStyle = marker.color;
        ctx.fillText(marker.label, left, top);
      }
      ctx.restore();
    },
  };
  // Legend entries for the markers' kinds (each label and colour once), to add to a legend's own.
  const markerLegendItems = (markers) => {
    const kinds = new Map((markers || []).map((marker) => [marker.kindLabel || marker.label, marker.color]));
    return [...kinds].map(([text, color]) => ({
      text, fillStyle: "rgba(255, 255, 255, 0)", strokeStyle: color, lineWidth: 1.5, lineDash: [5, 3], hidden: false,
    }));
  };

  // A chart with the shared options, `options` merged over them (their plugins and legend too).
  const make = (canvas, type, data, { options = {}, plugins = [], print = false } = {}) => {
    const base = baseOptions(print);
    const mine = options.plugins || {};
    const labels = { ...base.plugins.legend.labels, ...mine.legend?.labels };
    const legend = { ...base.plugins.legend, ...mine.legend, labels };
    return new Chart(canvas, {
      type, data, plugins,
      options: { ...base, ...options, plugins: { ...base.plugins, ...mine, legend } },
    });
  };

  // ---- DOM: figures for charts that pages make as their data comes.
  const element = (tag, className, text) => {
    const made = document.createElement(tag);
    if (className) made.className = className;
    if (text) made.textContent = text;
    return made;
  };
  // A <figure> with its chart box and caption, appended to `parent`; returns its canvas.
  const figure = (parent, caption, label) => {
    const box = element("figure");
    const frame = element("div", "chart");
    const canvas = element("canvas");
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", label || caption);
    frame.append(canvas);
    box.append(frame, element("figcaption", "", caption));
    parent.append(box);
    return canvas;
  };

  // ---- Printing: resolves once the charts are drawn: laid out at their boxes' size (responsive
  // charts resize on the next frames) and done animating.
  const nextFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));
  const settled = async (charts) => {
    await nextFrame();
    await nextFrame();
    while (charts.some((made) => Chart.animator.running(made))) await nextFrame();
  };

  // Replaces each chart by an <img> of it: what a browser prints or saves as PDF is then the
  // picture as drawn on screen, not a canvas it may redraw at another size or leave blank.
  const toImages = async (charts) => {
    const images = charts.map((made) => {
      const canvas = made.canvas; // destroy() forgets it
      const image = element("img", "chart-image");
      image.src = made.toBase64Image();
      image.alt = canvas.getAttribute("aria-label") || "";
      made.destroy();
      canvas.replaceWith(image);
      return image;
    });
    await Promise.all(images.map((image) => image.decode()));
  };

  window.BenchlabCharts = {
    BASELINE_BORDER, colour, format, withUnit, wrap, axisTitle, valueAxis, withinBounds, baseOptions,
    neutralLegendLabels, warmupShade, eventMarkers, markerLegendItems, make, element, figure, settled, toImages,
  };
})();
