// Training panel script (runs in the webview): draws the run snapshot the extension posts — loss, learning rate,
// gradient norm per layer, memory (uPlot line charts), the phase breakdown (bars), the selected histogram (uPlot
// bars) and the program's own tensorsight.Timer measurements — in the theme's colours, redrawn when the theme changes.
// NaN/Inf values are gaps in uPlot's lines, so the steps where a loss or gradient norm was NaN/Inf are drawn as marked
// bands (and listed under the chart); the banner says what applies now: the newest NaN/Inf stop, or the run's end.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const initial = JSON.parse(document.getElementById('initial-data').textContent);
  const strings = initial.strings;
  const root = document.getElementById('root');
  const charts = new Map();
  let run = initial.run;
  let selectedHistogram = (vscode.getState() || {}).histogram;

  const PALETTE = ['blue', 'orange', 'green', 'purple', 'red', 'yellow'];
  function colour(index) {
    const name = '--vscode-charts-' + PALETTE[index % PALETTE.length];
    return getComputedStyle(document.body).getPropertyValue(name).trim() || '#3794ff';
  }
  function foreground() {
    return getComputedStyle(document.body).getPropertyValue('--vscode-foreground').trim() || '#cccccc';
  }
  function gridColour() {
    return (
      getComputedStyle(document.body).getPropertyValue('--vscode-editorWidget-border').trim() ||
      'rgba(128,128,128,0.25)'
    );
  }

  function element(tag, attributes, children) {
    const node = document.createElement(tag);
    Object.entries(attributes || {}).forEach(([key, value]) => {
      if (key === 'text') node.textContent = value;
      else node.setAttribute(key, value);
    });
    (children || []).forEach((child) => node.appendChild(child));
    return node;
  }

  // Tick labels: bytes in binary units, other values with enough significant digits that two ticks never read alike
  // (a log axis of gradient norms spans 1e-6..1e2, where uPlot's default rounding prints "0" twice).
  const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  function formatBytes(value) {
    let unit = 0;
    let scaled = Math.abs(value);
    while (scaled >= 1024 && unit < BYTE_UNITS.length - 1) {
      scaled /= 1024;
      unit++;
    }
    return (
      (value < 0 ? '-' : '') + (unit ? scaled.toFixed(scaled < 10 ? 1 : 0) : String(scaled)) + ' ' + BYTE_UNITS[unit]
    );
  }
  function formatTick(value) {
    if (value == null) return ''; // a log axis hides some ticks by handing null splits
    if (value === 0) return '0';
    const magnitude = Math.abs(value);
    if (magnitude >= 1e6 || magnitude < 1e-3) return value.toExponential(1).replace('e+', 'e').replace('.0e', 'e');
    return String(Number(value.toPrecision(4)));
  }
  // Linear ticks get as many decimals as their spacing needs (2.3005 and 2.3010 must not both read 2.3).
  function formatTicks(splits, log) {
    if (log || splits.length < 2) return splits.map(formatTick);
    const spacing = Math.abs(splits[1] - splits[0]);
    const largest = Math.max(...splits.map(Math.abs));
    if (!(spacing > 0) || largest >= 1e6 || largest < 1e-3) return splits.map(formatTick);
    const decimals = Math.min(10, Math.max(0, Math.ceil(-Math.log10(spacing) - 1e-9)));
    return splits.map((v) => (v == null ? '' : v === 0 ? '0' : v.toFixed(decimals)));
  }

  function axes(kind, log) {
    const stroke = foreground();
    const grid = { stroke: gridColour(), width: 1 };
    const values = (_, splits) => (kind === 'bytes' ? splits.map(formatBytes) : formatTicks(splits, log));
    return [
      { stroke, grid, ticks: grid },
      { stroke, grid, ticks: grid, size: kind === 'bytes' ? 80 : 70, values },
    ];
  }

  // Aligns several (steps, values) series on the union of their steps, as uPlot wants; a log chart has no place for
  // a value <= 0 (a layer whose gradient is exactly zero): it is a gap there, not a scale that cannot be drawn.
  function align(seriesList, log) {
    const steps = Array.from(new Set(seriesList.flatMap((s) => s.steps))).sort((a, b) => a - b);
    const index = new Map(steps.map((step, i) => [step, i]));
    const columns = seriesList.map((s) => {
      const column = new Array(steps.length).fill(null);
      s.steps.forEach((step, i) => {
        const value = s.values[i];
        column[index.get(step)] = Number.isFinite(value) && (!log || value > 0) ? value : null;
      });
      return column;
    });
    return [steps, ...columns];
  }

  // Bands over the steps where a series was NaN/Inf, with a line and a label at the step it started.
  function drawNonfinite(u, spans) {
    if (!spans.length) return;
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const red = colour(4);
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    ctx.font = Math.round(11 * devicePixelRatio) + 'px sans-serif';
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    spans.forEach((span) => {
      const start = u.valToPos(span.from, 'x', true);
      const end = u.valToPos(span.to, 'x', true);
      ctx.globalAlpha = 0.15;
      ctx.fillStyle = red;
      ctx.fillRect(start, top, Math.max(end - start, 2 * devicePixelRatio), height);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = red;
      ctx.lineWidth = 1.5 * devicePixelRatio;
      ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
      ctx.beginPath();
      ctx.moveTo(start, top);
      ctx.lineTo(start, top + height);
      ctx.stroke();
      ctx.fillText(span.value, start + 3 * devicePixelRatio, top + 12 * devicePixelRatio);
    });
    ctx.restore();
  }

  // The non-finite spans of several series as one list (the same steps for several layers are one band).
  function spansOf(entries) {
    const seen = new Map();
    entries.forEach((e) =>
      ((run.nonfiniteScalars || {})[e.label] || []).forEach((span) => {
        const key = span.from + ':' + span.to;
        if (!seen.has(key)) seen.set(key, span);
      }),
    );
    return Array.from(seen.values()).sort((a, b) => a.from - b.from);
  }

  // The spans in words under the chart: the canvas cannot be read, and a band one step wide is easy to miss. Series
  // with the same spans (every layer of a run gone NaN) are one line: the first one's name and how many more.
  function nonfiniteList(container, entries) {
    const groups = new Map();
    entries.forEach((e) => {
      const spans = ((run.nonfiniteScalars || {})[e.label] || []).slice(-3);
      if (!spans.length) return;
      const signature = JSON.stringify(spans);
      const group = groups.get(signature);
      if (group) group.more++;
      else groups.set(signature, { label: e.label, spans, more: 0 });
    });
    const text = Array.from(groups.values()).map((e) =>
      e.spans
        .map((span) =>
          (span.from === span.to ? strings.nonfiniteAt : strings.nonfiniteFromTo)
            .replace('{0}', e.label + (e.more ? ' (+' + e.more + ')' : ''))
            .replace('{1}', span.value)
            .replace('{2}', String(span.from))
            .replace('{3}', String(span.to)),
        )
        .join('; '),
    );
    let list = container.querySelector('.nonfinite-marks');
    if (!text.length) {
      if (list) list.remove();
      return;
    }
    if (!list) {
      list = element('div', { class: 'nonfinite-marks alert' });
      container.appendChild(list);
    }
    list.textContent = text.slice(0, 4).join(' · ') + (text.length > 4 ? ' · …' : '');
  }

  function lineChart(id, container, title, entries, log, kind) {
    const width = Math.max(300, container.clientWidth - 20);
    const data = align(
      entries.map((e) => e.series),
      log,
    );
    const key = id + ':' + entries.map((e) => e.label).join('|') + ':' + document.body.className;
    const existing = charts.get(id);
    const marks = { spans: spansOf(entries) };
    if (existing && existing.key === key) {
      existing.marks.spans = marks.spans;
      existing.chart.setData(data);
      nonfiniteList(container, entries);
      return;
    }
    if (existing) existing.chart.destroy();
    container.textContent = '';
    const options = {
      title,
      width,
      height: 220,
      scales: { x: { time: false }, y: log ? { distr: 3 } : {} },
      axes: axes(kind, log),
      hooks: { draw: [(u) => drawNonfinite(u, marks.spans)] },
      series: [{ label: strings.step }].concat(
        entries.map((e, i) => ({
          label: e.label,
          stroke: colour(i),
          width: 1.5,
          spanGaps: false,
          value: (_, v) => (v == null ? '—' : kind === 'bytes' ? formatBytes(v) : formatTick(v)),
        })),
      ),
    };
    charts.set(id, { key, marks, chart: new uPlot(options, data, container) });
    nonfiniteList(container, entries);
  }

  function histogramChart(container, histogram) {
    const existing = charts.get('histogram');
    if (existing) existing.chart.destroy();
    charts.delete('histogram');
    container.textContent = '';
    const nonfinite = histogram.nonfinite || { nan: 0, posinf: 0, neginf: 0 };
    const counts = [nonfinite.nan, nonfinite.posinf, nonfinite.neginf].map(String);
    if (!histogram.counts.length) {
      const text = strings.histogramNoFinite.replace('{0}', String(histogram.step));
      container.appendChild(element('div', { class: 'alert empty', text: fill(text, counts, 1) }));
      return;
    }
    if (nonfinite.nan + nonfinite.posinf + nonfinite.neginf > 0)
      container.appendChild(element('div', { class: 'alert', text: fill(strings.histogramNonfinite, counts, 0) }));
    const centres = histogram.counts.map((_, i) => (histogram.edges[i] + histogram.edges[i + 1]) / 2);
    const options = {
      title: histogram.kind + ' · ' + histogram.name + ' · ' + strings.step + ' ' + histogram.step,
      width: Math.max(300, container.clientWidth - 20),
      height: 220,
      scales: { x: { time: false } },
      axes: axes(),
      legend: { show: false },
      series: [
        {},
        {
          label: histogram.name,
          stroke: colour(1),
          fill: colour(1),
          paths: uPlot.paths.bars({ size: [0.95, 100] }),
          points: { show: false },
        },
      ],
    };
    const plot = element('div');
    container.appendChild(plot);
    charts.set('histogram', { key: '', chart: new uPlot(options, [centres, histogram.counts], plot) });
  }

  // Replaces {first}, {first+1}... in a translated string with the given values.
  function fill(text, values, first) {
    return values.reduce((result, value, i) => result.replace('{' + (first + i) + '}', value), text);
  }

  function section(title, body) {
    return element('section', { class: 'card' }, [element('h2', { text: title }), body]);
  }

  function renderPhases(container) {
    container.textContent = '';
    const totals = run.phaseTotals;
    const sum = Object.values(totals).reduce((a, b) => a + b, 0);
    if (!run.phaseSteps || sum <= 0) {
      container.appendChild(element('div', { class: 'muted empty', text: strings.noPhases }));
      return;
    }
    const phases = ['data', 'forward', 'backward', 'optimizer', 'other'];
    const top = phases.reduce((a, b) => (totals[b] > totals[a] ? b : a));
    phases.forEach((phase) => {
      const share = totals[phase] / sum;
      const bar = element('div', { class: 'phase-bar' + (phase === top && share > 0.5 ? ' dominant' : '') });
      bar.style.width = (share * 100).toFixed(1) + '%';
      container.appendChild(
        element('div', { class: 'phase-row', 'data-phase': phase }, [
          element('span', { text: strings[phase] }),
          element('div', {}, [bar]),
          element('span', { class: 'num', text: (share * 100).toFixed(1) + '%' }),
        ]),
      );
    });
    container.appendChild(element('div', { class: 'muted', text: run.phaseSteps + ' ' + strings.steps }));
  }

  function renderHistograms(container) {
    const names = Object.keys(run.histograms).sort();
    container.textContent = '';
    if (names.length === 0) {
      container.appendChild(element('div', { class: 'muted empty', text: strings.noHistogram }));
      return;
    }
    if (!names.includes(selectedHistogram)) selectedHistogram = names[0];
    const select = element('select', { 'aria-label': strings.histograms });
    names.forEach((name) => {
      const option = element('option', { value: name, text: name });
      if (name === selectedHistogram) option.selected = true;
      select.appendChild(option);
    });
    const plot = element('div');
    select.addEventListener('change', () => {
      selectedHistogram = select.value;
      vscode.setState({ histogram: selectedHistogram });
      histogramChart(plot, run.histograms[selectedHistogram]);
    });
    container.appendChild(select);
    container.appendChild(plot);
    histogramChart(plot, run.histograms[selectedHistogram]);
  }

  const layout = {};
  function ensureLayout() {
    if (layout.ready) return;
    root.textContent = '';
    layout.alerts = element('div', { class: 'alert' });
    layout.loss = element('div');
    layout.lr = element('div');
    layout.grad = element('div');
    layout.memory = element('div');
    layout.phases = element('div');
    layout.histograms = element('div');
    layout.timers = element('div');
    root.appendChild(layout.alerts);
    root.appendChild(
      element('div', { class: 'grid' }, [
        section(strings.loss, layout.loss),
        section(strings.lr, layout.lr),
        section(strings.gradNorm, layout.grad),
        section(strings.phases, layout.phases),
        section(strings.histograms, layout.histograms),
        section(strings.memory, layout.memory),
        section(strings.timers, layout.timers),
      ]),
    );
    layout.ready = true;
  }

  function scalarEntries(filter) {
    return Object.keys(run.scalars)
      .filter(filter)
      .sort()
      .map((key) => ({ label: key, series: run.scalars[key] }));
  }

  function render() {
    if (!run) {
      root.textContent = '';
      root.appendChild(element('p', { class: 'muted empty', text: strings.waiting }));
      return;
    }
    ensureLayout();
    renderBanner(layout.alerts);
    const loss = scalarEntries((k) => k.endsWith('/loss'));
    const lr = scalarEntries((k) => k.endsWith('/lr'));
    const grad = scalarEntries((k) => /\/grad_norm(\/|$)/.test(k));
    if (loss.length) lineChart('loss', layout.loss, '', loss, false);
    if (lr.length) lineChart('lr', layout.lr, '', lr, false);
    if (grad.length) lineChart('grad', layout.grad, '', grad, true);
    if (run.memory.steps.length)
      lineChart('memory', layout.memory, '', [{ label: strings.memory, series: run.memory }], false, 'bytes');
    renderPhases(layout.phases);
    renderHistograms(layout.histograms);
    renderTimers(layout.timers);
  }

  // The run's state now: the newest NaN/Inf stop while it applies, else how the run ended (see runStore's Banner).
  function renderBanner(container) {
    container.textContent = '';
    const banner = run.banner;
    if (!banner) return;
    const row = element('div', { class: 'banner', 'data-kind': banner.kind });
    const stopLink = (stop) => {
      const link = element('a', { href: '#', text: '⚠ ' + stop.message + ' (' + strings.step + ' ' + stop.step + ')' });
      link.addEventListener('click', (event) => {
        event.preventDefault();
        vscode.postMessage({ type: 'open', file: stop.file, line: stop.line });
      });
      return link;
    };
    if (banner.kind === 'stop') {
      row.appendChild(stopLink(banner.stop));
    } else {
      const step = String(banner.step);
      let text = strings.runEnded.replace('{0}', step);
      if (banner.lossNonfiniteFrom !== undefined)
        text = strings.runEndedNonfinite.replace('{0}', step).replace('{1}', String(banner.lossNonfiniteFrom));
      if (banner.error) text += ' ' + strings.runEndedError.replace('{0}', banner.error);
      row.appendChild(
        element('div', { class: banner.lossNonfiniteFrom !== undefined || banner.error ? '' : 'muted', text }),
      );
      if (banner.stop) row.appendChild(stopLink(banner.stop));
    }
    container.appendChild(row);
  }

  function renderTimers(container) {
    container.textContent = '';
    const timers = Object.values(run.timers || {}).sort((a, b) => b.total - a.total);
    timers.forEach((timer) => {
      const text = strings.timerRow
        .replace('{0}', timer.name)
        .replace('{1}', (timer.last * 1000).toFixed(1))
        .replace('{2}', ((timer.total / timer.calls) * 1000).toFixed(1))
        .replace('{3}', String(timer.calls));
      if (timer.file === undefined) {
        container.appendChild(element('div', { text }));
        return;
      }
      const link = element('a', { href: '#', text });
      link.addEventListener('click', (event) => {
        event.preventDefault();
        vscode.postMessage({ type: 'open', file: timer.file, line: timer.line });
      });
      container.appendChild(element('div', {}, [link]));
    });
  }

  window.addEventListener('message', (event) => {
    if (event.data && event.data.type === 'snapshot') {
      run = event.data.run;
      render();
    }
  });
  // Theme switches change the body class; redraw so axes and series pick up the new colours.
  new MutationObserver(() => {
    charts.forEach((entry) => entry.chart.destroy());
    charts.clear();
    render();
  }).observe(document.body, { attributes: true, attributeFilter: ['class'] });
  render();
})();
