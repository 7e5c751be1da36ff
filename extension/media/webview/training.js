// Training panel script (runs in the webview): draws the run snapshot the extension posts — loss, learning rate,
// gradient norm per layer, memory (uPlot line charts), the phase breakdown (bars), the selected histogram (uPlot
// bars) and the program's own tensorsight.Timer measurements — in the theme's colours, redrawn when the theme changes.
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
    return splits.map((v) => (v === 0 ? '0' : v.toFixed(decimals)));
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

  // Aligns several (steps, values) series on the union of their steps, as uPlot wants.
  function align(seriesList) {
    const steps = Array.from(new Set(seriesList.flatMap((s) => s.steps))).sort((a, b) => a - b);
    const index = new Map(steps.map((step, i) => [step, i]));
    const columns = seriesList.map((s) => {
      const column = new Array(steps.length).fill(null);
      s.steps.forEach((step, i) => {
        const value = s.values[i];
        column[index.get(step)] = Number.isFinite(value) ? value : null;
      });
      return column;
    });
    return [steps, ...columns];
  }

  function lineChart(id, container, title, entries, log, kind) {
    const width = Math.max(300, container.clientWidth - 20);
    const data = align(entries.map((e) => e.series));
    const key = id + ':' + entries.map((e) => e.label).join('|') + ':' + document.body.className;
    const existing = charts.get(id);
    if (existing && existing.key === key) {
      existing.chart.setData(data);
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
    charts.set(id, { key, chart: new uPlot(options, data, container) });
  }

  function histogramChart(container, histogram) {
    const existing = charts.get('histogram');
    if (existing) existing.chart.destroy();
    charts.delete('histogram');
    container.textContent = '';
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
    charts.set('histogram', { key: '', chart: new uPlot(options, [centres, histogram.counts], container) });
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
    layout.alerts.textContent = '';
    run.nonfinite.slice(-3).forEach((stop) => {
      const link = element('a', { href: '#', text: '⚠ ' + stop.message + ' (' + strings.step + ' ' + stop.step + ')' });
      link.addEventListener('click', (event) => {
        event.preventDefault();
        vscode.postMessage({ type: 'open', file: stop.file, line: stop.line });
      });
      layout.alerts.appendChild(element('div', {}, [link]));
    });
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
