// Results view script (runs in the webview): renders a CLI tool's report — summary, findings, and tables sortable
// by any column — and asks the extension to open a source line when a row with a file is clicked.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const root = document.getElementById('root');
  let data = JSON.parse(document.getElementById('initial-data').textContent);
  const sortState = {};

  function element(tag, attributes, children) {
    const node = document.createElement(tag);
    Object.entries(attributes || {}).forEach(([key, value]) => {
      if (key === 'text') node.textContent = value;
      else node.setAttribute(key, value);
    });
    (children || []).forEach((child) => node.appendChild(child));
    return node;
  }

  function format(value) {
    if (value === null || value === undefined) return '';
    if (typeof value === 'number' && !Number.isInteger(value)) return value.toPrecision(4);
    return String(value);
  }

  function compare(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    return String(a).localeCompare(String(b));
  }

  function renderTable(table) {
    const state = sortState[table.name] || { column: -1, descending: true };
    const keys = table.sortKeys || table.rows;
    const order = table.rows.map((_, index) => index);
    if (state.column >= 0) {
      order.sort(
        (a, b) =>
          compare(keys[a][state.column], keys[b][state.column]) * (state.descending ? -1 : 1) ||
          a - b /* ties keep the tool's order */,
      );
    }
    const numeric = table.numericColumns || [];
    const header = element(
      'tr',
      {},
      table.columns.map((name, index) => {
        const cell = element('th', { text: name, title: data.strings.sortHint });
        const classes = [];
        if (numeric.includes(index)) classes.push('num');
        if (index === state.column) classes.push(state.descending ? 'sorted-desc' : 'sorted-asc');
        if (classes.length) cell.className = classes.join(' ');
        cell.addEventListener('click', () => {
          sortState[table.name] = { column: index, descending: state.column === index ? !state.descending : true };
          render();
        });
        return cell;
      }),
    );
    const body = order.map((index) => {
      const row = table.rows[index];
      let file = table.fileColumn !== undefined ? row[table.fileColumn] : null;
      let line = table.lineColumn !== undefined ? row[table.lineColumn] : 1;
      if (table.locations) {
        const where = table.locations[index];
        file = where ? where.file : null;
        line = where ? where.line : 1;
      }
      const classes = [];
      if (file) classes.push('link');
      if (table.highlight && table.highlight[index]) classes.push('user');
      const tr = element(
        'tr',
        classes.length ? { class: classes.join(' ') } : {},
        row.map((value, column) =>
          element('td', {
            class: typeof value === 'number' || numeric.includes(column) ? 'num' : '',
            text: format(value),
          }),
        ),
      );
      if (file) tr.addEventListener('click', () => vscode.postMessage({ type: 'open', file, line: Number(line) || 1 }));
      return tr;
    });
    return element('section', { 'data-table': table.name }, [
      element('h2', { text: table.title || table.name }),
      element('div', { class: 'muted', text: table.note || data.strings.sortHint }),
      element('table', {}, [element('thead', {}, [header]), element('tbody', {}, body)]),
    ]);
  }

  function render() {
    const report = data.report;
    root.textContent = '';
    root.appendChild(element('h1', { text: data.title }));
    if (report.error)
      root.appendChild(
        element('p', { class: 'alert', text: (report.errorTitle || data.strings.error) + ': ' + report.error }),
      );
    if (report.summary.length) {
      root.appendChild(element('h2', { text: data.strings.summary }));
      root.appendChild(
        element(
          'table',
          { class: 'summary' },
          report.summary.map(([key, value]) =>
            element('tr', {}, [element('th', { text: key }), element('td', { text: format(value) })]),
          ),
        ),
      );
    }
    // a profile or a shape map has tables and no findings: no empty "Findings" section above them
    if (report.findings.length || !report.tables.length)
      root.appendChild(element('h2', { text: data.strings.findings }));
    if (!report.findings.length && !report.tables.length)
      root.appendChild(element('p', { class: 'muted', text: data.strings.noFindings }));
    report.findings.forEach((finding) => {
      const row = element('div', { class: 'link severity-' + finding.severity }, [
        element('span', {
          text:
            finding.severity + ' [' + finding.kind + '] ' + finding.message + ' — ' + finding.file + ':' + finding.line,
        }),
      ]);
      row.addEventListener('click', () => vscode.postMessage({ type: 'open', file: finding.file, line: finding.line }));
      root.appendChild(row);
    });
    report.tables.forEach((table) => root.appendChild(renderTable(table)));
  }

  window.addEventListener('message', (event) => {
    if (event.data && event.data.type === 'report') {
      data = event.data;
      render();
    }
  });
  render();
})();
