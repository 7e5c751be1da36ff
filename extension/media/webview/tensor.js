// View Tensor panel script (runs in the webview opened by extension/src/panel/tensorViewer.ts): draws what the
// extension posts — the histogram on a log scale with the previous stop's as an outline, min/max/mean/σ and the
// zero/NaN/+Inf/-Inf counts, and one picture (heatmap with a hover that names the index and value, image grid, or
// line), plus the heatmap of changes since the last stop. Colours and scales are computed by the extension
// (panel/tensorView.ts, unit-tested); this script only puts them on canvases and sends back the slice, the
// normalisation and refresh requests.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const initial = JSON.parse(document.getElementById('initial-data').textContent);
  const strings = initial.strings;
  const colours = initial.colours;
  const root = document.getElementById('root');
  const MARK_NAMES = ['finite', 'nan', 'posinf', 'neginf', 'empty'];

  function element(tag, attributes, children) {
    const node = document.createElement(tag);
    Object.entries(attributes || {}).forEach(([key, value]) => {
      if (key === 'text') node.textContent = value;
      else node.setAttribute(key, value);
    });
    (children || []).forEach((child) => node.appendChild(child));
    return node;
  }
  function format(template, ...args) {
    return template.replace(/\{(\d)\}/g, (_, i) => String(args[Number(i)]));
  }
  function themeColour(name, fallback) {
    return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
  }
  function number(value) {
    if (value === null || value === undefined) return '—';
    if (value === 0) return '0';
    const magnitude = Math.abs(value);
    if (magnitude >= 1e5 || magnitude < 1e-3) return value.toExponential(3);
    return String(Number(value.toPrecision(6)));
  }
  function rgbaCss(rgba) {
    return 'rgba(' + rgba[0] + ',' + rgba[1] + ',' + rgba[2] + ',' + (rgba[3] / 255).toFixed(2) + ')';
  }
  function bytes(base64) {
    const text = atob(base64);
    const out = new Uint8ClampedArray(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }
  function markLabel(mark) {
    return mark === 4 ? strings.empty : strings[MARK_NAMES[mark]];
  }

  // A grid of RGBA cells drawn on a canvas without smoothing, at most `size` pixels a side.
  function gridCanvas(rgba, rows, cols, size, className) {
    const source = document.createElement('canvas');
    source.width = cols;
    source.height = rows;
    source.getContext('2d').putImageData(new ImageData(bytes(rgba), cols, rows), 0, 0);
    const scale = Math.max(1, Math.min(size / cols, size / rows));
    const canvas = element('canvas', { class: className || 'picture' });
    canvas.width = Math.round(cols * scale);
    canvas.height = Math.round(rows * scale);
    const context = canvas.getContext('2d');
    context.imageSmoothingEnabled = false;
    context.drawImage(source, 0, 0, canvas.width, canvas.height);
    return canvas;
  }

  function cellAt(canvas, event, rows, cols) {
    const box = canvas.getBoundingClientRect();
    const r = Math.floor(((event.clientY - box.top) / box.height) * rows);
    const c = Math.floor(((event.clientX - box.left) / box.width) * cols);
    return r >= 0 && r < rows && c >= 0 && c < cols ? [r, c] : undefined;
  }

  // The source index of a pooled cell: exact when a cell is one element, else the block's rows and columns.
  function cellIndex(grid, slice, r, c) {
    if (grid.blockRows === 1 && grid.blockCols === 1) return '[' + slice.concat([r, c]).join(', ') + ']';
    const span = (i, block, total) => {
      const from = i * block;
      const to = Math.min(total, from + block) - 1;
      return from === to ? String(from) : from + '–' + to;
    };
    const lead = slice.length ? '[' + slice.join(', ') + '] ' : '';
    return (
      lead + format(strings.cell, span(r, grid.blockRows, grid.sourceRows), span(c, grid.blockCols, grid.sourceCols))
    );
  }

  function hover(canvas, text) {
    const tip = element('div', { class: 'tip', role: 'status' });
    canvas.addEventListener('mousemove', (event) => {
      const label = text(event);
      tip.textContent = label || '';
      tip.hidden = !label;
    });
    canvas.addEventListener('mouseleave', () => (tip.hidden = true));
    tip.hidden = true;
    return tip;
  }

  function drawHistogram(view) {
    const canvas = element('canvas', { class: 'histogram' });
    canvas.width = 420;
    canvas.height = 150;
    const context = canvas.getContext('2d');
    const plot = { left: 4, right: canvas.width - 4, top: 6, bottom: canvas.height - 20 };
    const x = (fraction) => plot.left + fraction * (plot.right - plot.left);
    const y = (height) => plot.bottom - height * (plot.bottom - plot.top);
    context.fillStyle = themeColour('--vscode-charts-blue', '#3794ff');
    for (const bar of view.bars) {
      if (bar.count > 0)
        context.fillRect(x(bar.x0), y(bar.height), Math.max(1, x(bar.x1) - x(bar.x0)), y(0) - y(bar.height));
    }
    if (view.previous) {
      context.strokeStyle = themeColour('--vscode-charts-orange', '#d18616');
      context.setLineDash([3, 2]);
      context.beginPath();
      for (const bar of view.previous) {
        if (bar.count === 0) continue;
        context.rect(x(bar.x0), y(bar.height), Math.max(1, x(bar.x1) - x(bar.x0)), y(0) - y(bar.height));
      }
      context.stroke();
      context.setLineDash([]);
    }
    context.fillStyle = themeColour('--vscode-foreground', '#cccccc');
    context.font = '11px sans-serif';
    context.textAlign = 'left';
    context.fillText(number(view.low), plot.left, canvas.height - 6);
    context.textAlign = 'right';
    context.fillText(number(view.high), plot.right, canvas.height - 6);
    const tip = hover(canvas, (event) => {
      const box = canvas.getBoundingClientRect();
      const fraction = ((event.clientX - box.left) / box.width) * canvas.width;
      const bar = view.bars.find((b) => x(b.x0) <= fraction && fraction <= x(b.x1));
      return bar ? number(bar.from) + ' … ' + number(bar.to) + ': ' + bar.count : '';
    });
    return element('div', { class: 'histogram-box' }, [canvas, tip]);
  }

  function statsTable(payload, view) {
    const rows = [
      ['min', payload.stats.min],
      ['max', payload.stats.max],
      ['mean', payload.stats.mean],
      ['std', payload.stats.std],
    ].map(([key, value]) =>
      element('tr', {}, [
        element('th', { text: strings[key] }),
        element('td', { 'data-stat': key, text: number(value) }),
      ]),
    );
    for (const special of view.specials) {
      const swatch = element('span', { class: 'swatch' });
      if (colours[special.key]) swatch.style.background = rgbaCss(colours[special.key]);
      const cells = [
        element('th', {}, [swatch, document.createTextNode(strings[special.key])]),
        element('td', { 'data-count': special.key, text: String(special.count) }),
      ];
      if (special.previous !== undefined) {
        const delta = special.count - special.previous;
        cells.push(
          element('td', {
            class: delta ? 'changed' : 'muted',
            'data-previous': special.key,
            text:
              strings.previous + ' ' + special.previous + (delta ? ' (' + (delta > 0 ? '+' : '') + delta + ')' : ''),
          }),
        );
      }
      rows.push(element('tr', { class: special.count && special.key !== 'zero' ? 'nonfinite' : '' }, cells));
    }
    return element('table', { class: 'stats' }, rows);
  }

  function legend() {
    return element(
      'div',
      { class: 'legend' },
      ['nan', 'posinf', 'neginf', 'empty'].map((key) => {
        const swatch = element('span', { class: 'swatch' });
        swatch.style.background = rgbaCss(colours[key]);
        return element('span', {}, [swatch, document.createTextNode(key === 'empty' ? strings.empty : strings[key])]);
      }),
    );
  }

  function drawHeatmap(message) {
    const grid = message.payload.heatmap;
    const slice = message.payload.slice;
    const canvas = gridCanvas(message.picture.rgba, grid.rows, grid.cols, 480, 'picture heatmap');
    const tip = hover(canvas, (event) => {
      const cell = cellAt(canvas, event, grid.rows, grid.cols);
      if (!cell) return '';
      const [r, c] = cell;
      const mark = grid.marks[r][c];
      return cellIndex(grid, slice, r, c) + ' = ' + (mark === 0 ? number(grid.values[r][c]) : markLabel(mark));
    });
    const notes = [
      element('span', { class: 'muted', text: number(message.picture.low) + ' … ' + number(message.picture.high) }),
    ];
    if (grid.blockRows > 1 || grid.blockCols > 1) {
      notes.push(
        element('span', { class: 'muted', text: ' ' + format(strings.pooled, grid.blockRows, grid.blockCols) }),
      );
    }
    return element('section', {}, [canvas, tip, element('div', {}, notes), legend()]);
  }

  function drawImages(message) {
    const set = message.payload.image;
    const size = set.images.length === 1 ? 512 : 160;
    const tiles = set.images.map((image, i) => {
      const first = image.channels[0];
      return gridCanvas(message.picture.images[i], first.rows, first.cols, size, 'picture image');
    });
    const toggle = element('select', { 'aria-label': strings.normalize }, [
      element('option', { value: 'channel', text: strings.perChannel }),
      element('option', { value: 'global', text: strings.global }),
    ]);
    toggle.value = message.normalize;
    toggle.addEventListener('change', () => vscode.postMessage({ type: 'normalize', value: toggle.value }));
    return element('section', {}, [
      element('label', { class: 'control' }, [document.createTextNode(strings.normalize + ' '), toggle]),
      element('div', { class: 'image-grid' }, tiles),
      element('div', { class: 'muted', text: format(strings.images, set.shown, set.count, set.layout) }),
      legend(),
    ]);
  }

  function drawLine(message) {
    const line = message.payload.line;
    const canvas = element('canvas', { class: 'picture line' });
    canvas.width = 640;
    canvas.height = 220;
    const context = canvas.getContext('2d');
    const finite = line.min.concat(line.max).filter((v) => v !== null);
    const low = finite.length ? Math.min(...finite) : 0;
    const high = finite.length ? Math.max(...finite) : 1;
    const span = high > low ? high - low : 1;
    const x = (i) => ((i + 0.5) / line.points) * canvas.width;
    const y = (v) => canvas.height - 4 - ((v - low) / span) * (canvas.height - 8);
    context.strokeStyle = themeColour('--vscode-charts-blue', '#3794ff');
    context.beginPath();
    for (let i = 0; i < line.points; i++) {
      if (line.min[i] === null) continue;
      context.moveTo(x(i), y(line.min[i]));
      context.lineTo(x(i), Math.min(y(line.min[i]) - 1, y(line.max[i])));
      if (i + 1 < line.points && line.min[i + 1] !== null) context.lineTo(x(i + 1), y(line.min[i + 1]));
    }
    context.stroke();
    for (let i = 0; i < line.points; i++) {
      const mark = line.marks[i];
      if (mark === 0 || mark === 4) continue;
      context.fillStyle = rgbaCss(colours[MARK_NAMES[mark]]);
      context.fillRect(x(i) - 1, 0, 2, canvas.height);
    }
    const tip = hover(canvas, (event) => {
      const box = canvas.getBoundingClientRect();
      const i = Math.floor(((event.clientX - box.left) / box.width) * line.points);
      if (i < 0 || i >= line.points) return '';
      const from = i * line.bucket;
      const to = Math.min(line.length, from + line.bucket) - 1;
      const index = from === to ? '[' + from + ']' : '[' + from + '–' + to + ']';
      const mark = line.marks[i];
      if (line.bucket === 1) return index + ' = ' + (mark === 0 ? number(line.min[i]) : markLabel(mark));
      const values = number(line.min[i]) + ' … ' + number(line.max[i]);
      return index + ': ' + values + (mark !== 0 ? ' (' + markLabel(mark) + ')' : '');
    });
    return element('section', {}, [
      canvas,
      tip,
      element('div', { class: 'muted', text: format(strings.line, line.bucket) }),
      legend(),
    ]);
  }

  function slicePicker(message) {
    if (!message.slices.length) return undefined;
    const inputs = message.slices.map((dimension, i) => {
      const range = element('input', {
        type: 'range',
        min: '0',
        max: String(dimension.size - 1),
        value: String(dimension.index),
        'aria-label': strings.slice + ' ' + i,
      });
      const box = element('input', {
        type: 'number',
        min: '0',
        max: String(dimension.size - 1),
        value: String(dimension.index),
        'data-slice': String(i),
      });
      range.addEventListener('input', () => (box.value = range.value));
      const send = () =>
        vscode.postMessage({ type: 'slice', index: message.slices.map((_, j) => Number(values[j].value)) });
      range.addEventListener('change', send);
      box.addEventListener('change', () => {
        range.value = box.value;
        send();
      });
      return { range, box };
    });
    const values = inputs.map((input) => input.box);
    return element('div', { class: 'slice-picker' }, [
      element('span', { text: strings.slice + ' [' + message.slices.map((d) => d.index).join(', ') + ', :, :]' }),
      ...inputs.map((input) => element('span', { class: 'control' }, [input.range, input.box])),
    ]);
  }

  function sinceLastStop(message) {
    const children = [element('h2', { text: strings.sinceLastStop })];
    if (!message.hasPrevious) {
      children.push(element('div', { class: 'muted', text: strings.noPrevious }));
    } else if (message.diff) {
      const diff = message.diff;
      const canvas = gridCanvas(diff.rgba, diff.rows, diff.cols, 320, 'picture diff');
      children.push(canvas);
      children.push(
        element('div', {
          class: 'muted',
          'data-diff': 'heatmap',
          text: format(strings.diffLargest, number(diff.largest), diff.changedMarks),
        }),
      );
    } else if (message.payload.kind === 'heatmap') {
      children.push(element('div', { class: 'muted', text: strings.diffShapes }));
    }
    return element('section', { class: 'since' }, children);
  }

  function header(expression, meta, status) {
    const refresh = element('button', { type: 'button', text: strings.refresh });
    refresh.addEventListener('click', () => vscode.postMessage({ type: 'refresh' }));
    const described =
      meta && meta.shape ? [meta.library, meta.dtype, '[' + meta.shape.join(', ') + ']', meta.device] : [];
    return element('header', {}, [
      element('h1', { text: expression }),
      element('div', { class: 'muted', text: described.filter(Boolean).join(' · ') }),
      status ? element('div', { class: 'status', role: 'status', text: status }) : document.createTextNode(''),
      refresh,
    ]);
  }

  function render(message) {
    if (message.type === 'loading') {
      // keep the last drawing while the next one is evaluated; only say so
      let status = root.querySelector('.status');
      if (!status) {
        status = element('div', { class: 'status', role: 'status' });
        root.prepend(status);
      }
      status.textContent = strings.loading;
      return;
    }
    root.replaceChildren();
    if (message.type === 'problem') {
      root.appendChild(header(message.expression, message.meta, message.text));
      return;
    }
    const payload = message.payload;
    root.appendChild(header(message.expression, payload.meta));
    const picker = slicePicker(message);
    if (picker) root.appendChild(picker);
    root.appendChild(
      element('section', { class: 'summary' }, [
        element('div', {}, [
          element('h2', { text: strings.histogram }),
          drawHistogram(message.histogram),
          message.hasPrevious
            ? element('div', { class: 'muted' }, [
                element('span', { class: 'key current', text: strings.current }),
                element('span', { class: 'key previous', text: strings.previous }),
              ])
            : document.createTextNode(''),
        ]),
        statsTable(payload, message.histogram),
      ]),
    );
    let picture;
    if (payload.kind === 'heatmap') picture = drawHeatmap(message);
    else if (payload.kind === 'image') picture = drawImages(message);
    else if (payload.kind === 'line') picture = drawLine(message);
    else picture = element('div', { class: 'muted', text: strings.scalar });
    root.appendChild(element('div', { class: 'pictures' }, [picture, sinceLastStop(message)]));
  }

  window.addEventListener('message', (event) => render(event.data));
  root.appendChild(element('div', { class: 'muted', text: strings.loading }));
  // a message posted while this page was still loading is lost: ask for the latest one
  vscode.postMessage({ type: 'ready' });
})();
