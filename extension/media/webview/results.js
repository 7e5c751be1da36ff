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
    const rows = table.rows.slice();
    if (state.column >= 0) {
      rows.sort((a, b) => compare(a[state.column], b[state.column]) * (state.descending ? -1 : 1));
    }
    const header = element(
      'tr',
      {},
      table.columns.map((name, index) => {
        const cell = element('th', { text: name, title: data.strings.sortHint });
        if (index === state.column) cell.className = state.descending ? 'sorted-desc' : 'sorted-asc';
        cell.addEventListener('click', () => {
          sortState[table.name] = { column: index, descending: state.column === index ? !state.descending : true };
          render();
        });
        return cell;
      }),
    );
    const body = rows.map((row) => {
      const file = table.fileColumn !== undefined ? row[table.fileColumn] : null;
      const line = table.lineColumn !== undefined ? row[table.lineColumn] : 1;
      const tr = element(
        'tr',
        file ? { class: 'link' } : {},
        row.map((value) => element('td', { class: typeof value === 'number' ? 'num' : '', text: format(value) })),
      );
      if (file) tr.addEventListener('click', () => vscode.postMessage({ type: 'open', file, line: Number(line) || 1 }));
      return tr;
    });
    return element('section', {}, [
      element('h2', { text: table.name }),
      element('div', { class: 'muted', text: data.strings.sortHint }),
      element('table', {}, [element('thead', {}, [header]), element('tbody', {}, body)]),
    ]);
  }

  function render() {
    const report = data.report;
    root.textContent = '';
    root.appendChild(element('h1', { text: data.title }));
    if (report.error)
      root.appendChild(element('p', { class: 'alert', text: data.strings.error + ': ' + report.error }));
    if (report.summary.length) {
      root.appendChild(element('h2', { text: data.strings.summary }));
      root.appendChild(
        element(
          'table',
          {},
          report.summary.map(([key, value]) =>
            element('tr', {}, [element('th', { text: key }), element('td', { text: format(value) })]),
          ),
        ),
      );
    }
    root.appendChild(element('h2', { text: data.strings.findings }));
    if (!report.findings.length) root.appendChild(element('p', { class: 'muted', text: data.strings.noFindings }));
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
