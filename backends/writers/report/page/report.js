// ferret's report page: draws the views from the run's data (the JSON in
// #ferret-data, written by backends/writers/report/src/report_data.cpp). Every text
// from the data goes into the page through text nodes and attributes, never
// as markup, so a name cannot add elements or run code. Drawing is plain
// SVG: a few nodes, matrices, strips and bars need no library.
'use strict';
(function () {
  // A failure is shown on the page and left where the tests look.
  window.addEventListener('error', (event) => {
    document.body.dataset.error = String(event.message);
    document.body.prepend(document.createTextNode('The report could not be drawn: ' + event.message));
  });
  const data = JSON.parse(document.getElementById('ferret-data').textContent);
  const run = data.run;
  // Rank 0 of an MPI job: the job's ranks (job_data.cpp); null otherwise.
  const job = JSON.parse(document.getElementById('ferret-job').textContent);

  // --- numbers, written as number_format.cpp writes them -----------------------
  // Exact integer rounding, ties to even, so that the digits match the summary's.
  function rounded(numerator, denominator) {
    const quotient = numerator / denominator;
    const twiceRemainder = 2n * (numerator % denominator);
    if (twiceRemainder > denominator || (twiceRemainder === denominator && quotient % 2n === 1n))
      return quotient + 1n;
    return quotient;
  }
  function withDecimals(units, digits) {
    const scale = 10n ** BigInt(digits);
    return (units / scale).toString() + '.' + (units % scale).toString().padStart(digits, '0');
  }
  const format = {
    bytes(value) {
      const bytes = BigInt(value);
      if (bytes < 1024n) return bytes.toString() + ' B';
      const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
      let unit = 0;
      let divisor = 1024n;
      while (unit + 1 < units.length && bytes / divisor >= 1024n) {
        divisor *= 1024n;
        ++unit;
      }
      return withDecimals(rounded(bytes * 10n, divisor), 1) + ' ' + units[unit];
    },
    thousandths(ns, unit) {
      const value = BigInt(ns);
      const negative = value < 0n;
      const units = rounded(negative ? -value : value, unit / 1000n);
      return (negative && units !== 0n ? '-' : '') + withDecimals(units, 3);
    },
    seconds(ns) { return format.thousandths(ns, 1000000000n); },
    ms(ns) { return format.thousandths(ns, 1000000n); },
    meanUs(totalNs, count) {
      if (count === 0 || totalNs < 0) return '-';
      return withDecimals(rounded(BigInt(totalNs), BigInt(count)), 3);
    },
    rate(bytes, ns) {
      if (ns <= 0) return '-';
      return withDecimals(rounded(BigInt(bytes) * 100n, BigInt(ns)), 2);
    },
    percent(ppmSum, count) {
      if (count === 0) return '-';
      return withDecimals(rounded(BigInt(ppmSum), BigInt(count) * 1000n), 1) + '%';
    },
    // Table cells: "-" marks nothing at all.
    bytesCell(bytes) { return bytes === 0 ? '-' : format.bytes(bytes); },
    count(value) { return String(value); },
  };
  const endLabel = (end) => (end < 0 ? 'host' : 'GPU ' + end);
  const gpuIndex = Object.fromEntries(data.gpu_metrics.map((name, i) => [name, i]));
  const gpu = (metrics, name) => metrics[gpuIndex[name]];

  // --- the DOM, built from text --------------------------------------------------
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      node.setAttribute(name, value === true ? '' : String(value));
    }
    append(node, children);
    return node;
  }
  function append(node, children) {
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attributes, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes || {}))
      if (value !== undefined && value !== null) node.setAttribute(name, String(value));
    return append(node, children);
  }
  const titled = (node, text) => { node.appendChild(svg('title', {}, text)); return node; };

  // A table whose columns sort on a click on their header.
  //   columns: {title, align: 'r'|'l', value(row) for sorting, cell(row) -> text or node, name}
  //   options: id, sortBy (column index), ascending, key(row), onSelect(row), selected key
  function sortableTable(columns, rows, options) {
    let sortBy = options.sortBy;
    let ascending = !!options.ascending;
    let selected = options.selected;
    const table = el('table', {id: options.id});
    const headRow = el('tr');
    const body = el('tbody');
    table.append(el('thead', {}, headRow), body);
    const headers = columns.map((column, index) => {
      const th = el('th', {class: (column.align === 'r' ? 'r ' : '') + (column.value ? 'sortable' : ''),
                           scope: 'col'}, column.title);
      if (column.value)
        th.addEventListener('click', () => {
          ascending = sortBy === index ? !ascending : column.align !== 'r';
          sortBy = index;
          draw();
        });
      headRow.appendChild(th);
      return th;
    });
    function draw() {
      const ordered = rows.slice();
      if (sortBy !== undefined && columns[sortBy].value) {
        const value = columns[sortBy].value;
        ordered.sort((a, b) => {
          const x = value(a);
          const y = value(b);
          const order = x < y ? -1 : x > y ? 1 : 0;
          return ascending ? order : -order;
        });
      }
      headers.forEach((th, index) => {
        if (index === sortBy) th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
        else th.removeAttribute('aria-sort');
      });
      body.replaceChildren(...ordered.map((row) => {
        const key = options.key ? options.key(row) : undefined;
        const tr = el('tr', {'data-key': key, class: options.onSelect ? 'selectable' : undefined});
        if (key !== undefined && key === selected) tr.classList.add('selected');
        for (const column of columns) {
          const content = column.cell(row);
          // Long names are clipped on screen; the whole name is the cell's title.
          tr.appendChild(column.name
                           ? el('td', {class: 'name', title: typeof content === 'string' ? content : undefined},
                                el('span', {class: 'clip'}, content))
                           : el('td', {class: column.align === 'r' ? 'r' : undefined}, content));
        }
        if (options.onSelect)
          tr.addEventListener('click', () => {
            selected = key;
            for (const other of body.children) other.classList.toggle('selected', other === tr);
            options.onSelect(row);
          });
        return tr;
      }));
    }
    draw();
    return table;
  }

  // --- views and navigation ----------------------------------------------------------
  const views = [
    {id: 'system', title: 'System', draw: drawSystem},
    {id: 'objects', title: 'Objects', draw: drawObjects},
    {id: 'code', title: 'Code', draw: drawCode},
    {id: 'devices', title: 'Devices', draw: drawDevices},
    {id: 'run', title: 'Run', draw: drawRun},
  ];
  if (job) views.push({id: 'ranks', title: 'Ranks', draw: drawRanks});
  const tabs = document.getElementById('tabs');
  // A location's hash names a view and, after a '/', an item in it: #objects/2.
  function follow(hash) {
    const [id, key] = hash.split('/');
    show(id);
    if (key !== undefined && selectInView[id]) selectInView[id](key);
  }
  function show(id) {
    if (!views.some((view) => view.id === id)) id = hasGpuData() ? 'system' : 'code';
    for (const view of views) {
      document.getElementById('view-' + view.id).classList.toggle('shown', view.id === id);
      document.getElementById('tab-' + view.id).setAttribute('aria-selected', view.id === id);
    }
  }
  function hasGpuData() { return run.gpu_operations > 0; }
  // Follows a link from one view to an item of another.
  const selectInView = {};
  function jump(view, key) {
    location.hash = view + '/' + key;  // follows it
  }

  // --- the system view: who moved how much to whom ------------------------------------
  function drawSystem(root) {
    root.append(el('h2', {}, 'System: data movement between the host and the GPUs'));
    const matrices = data.traffic.filter((matrix) => matrix.cells.length > 0);
    if (matrices.length === 0) {
      root.append(el('p', {class: 'note'}, 'No data moved between the host and GPUs in this run.'));
      return;
    }
    let matrix = matrices[0];
    let measure = 'bytes';
    // #system/device-initiated: that matrix's cells.
    selectInView.system = (name) => {
      const named = matrices.find((m) => m.name === name);
      if (!named) return;
      matrix = named;
      controls.querySelectorAll('input[name="matrix"]').forEach((input) => {
        input.checked = matrices[input.value] === named;
      });
      redraw();
    };
    const controls = el('div', {class: 'controls'});
    const picture = el('div', {class: 'split'});
    root.append(controls, picture);
    const radio = (name, value, label, checked, change) => {
      const input = el('input', {type: 'radio', name, value, id: 'system-' + name + '-' + value,
                                 checked});
      input.addEventListener('change', () => change(value));
      return el('label', {}, input, ' ', label);
    };
    controls.append(el('span', {}, 'Edges and cells by '),
                    radio('measure', 'bytes', 'bytes', true, (v) => { measure = v; redraw(); }),
                    radio('measure', 'operations', 'operations', false, (v) => { measure = v; redraw(); }));
    if (matrices.length > 1)
      controls.append(el('span', {}, 'Traffic: '),
                      ...matrices.map((m, i) => radio('matrix', i, m.name, i === 0,
                                                      (v) => { matrix = matrices[v]; redraw(); })));
    const csv = el('button', {class: 'action', id: 'system-csv', type: 'button'}, 'Export matrix as CSV');
    csv.addEventListener('click', () => {
      const lines = ['from,to,bytes,operations'];
      for (const [from, to, bytes, operations] of matrix.cells)
        lines.push([endLabel(from), endLabel(to), bytes, operations].join(','));
      const link = el('a', {href: URL.createObjectURL(new Blob([lines.join('\n') + '\n'], {type: 'text/csv'})),
                            download: 'ferret-' + matrix.name + '-matrix.csv'});
      document.body.appendChild(link);
      link.click();
      link.remove();
    });
    controls.append(csv);

    const copies = data.copies;
    const totalBytes = copies.reduce((sum, row) => sum + row.bytes, 0);
    const totalCount = copies.reduce((sum, row) => sum + row.count, 0);
    root.append(el('h3', {}, 'Copies by direction'),
                el('p', {id: 'system-total'}, format.count(totalCount) + ' copies moved ' +
                   format.bytes(totalBytes) + ' in all.'),
                sortableTable([
                  {title: 'direction', cell: (r) => r.kind, value: (r) => r.kind},
                  {title: 'count', align: 'r', cell: (r) => format.count(r.count), value: (r) => r.count},
                  {title: 'bytes', align: 'r', cell: (r) => format.bytes(r.bytes), value: (r) => r.bytes},
                  {title: 'total ms', align: 'r', cell: (r) => format.ms(r.ns), value: (r) => r.ns},
                  {title: 'mean GB/s', align: 'r', cell: (r) => format.rate(r.bytes, r.ns),
                   value: (r) => (r.ns > 0 ? r.bytes / r.ns : -1)},
                ], copies, {id: 'system-copies'}));

    function redraw() {
      const value = (cell) => (measure === 'bytes' ? cell[2] : cell[3]);
      const text = (amount) => (measure === 'bytes' ? format.bytesCell(amount) : amount === 0 ? '-' : format.count(amount));
      picture.replaceChildren(graph(matrices, value, text), heatmap(matrix, value, text));
    }
    redraw();
  }

  // How each matrix's edges are drawn: the copies solid, the kernels' own
  // loads and stores (device-initiated) dashed, in another colour.
  const edgeStyles = {
    'copies': {color: '47,111,189', dash: undefined, bend: 0.18, marker: 'arrow'},
    'device-initiated': {color: '214,96,46', dash: '7 4', bend: 0.36, marker: 'arrow-device-initiated'},
  };
  // Host and GPUs on a circle, the host on the left; an arrow per direction
  // and matrix.
  function graph(matrices, value, text) {
    const ends = data.ends;
    const size = 460;
    const center = size / 2;
    const radius = ends.length > 1 ? 165 : 0;
    const at = new Map(ends.map((end, i) => {
      const angle = Math.PI + (2 * Math.PI * i) / ends.length;
      return [end, {x: center + radius * Math.cos(angle), y: center + radius * Math.sin(angle)}];
    }));
    // One scale for all matrices: their edges compare.
    const max = Math.max(1, ...matrices.flatMap((m) => m.cells.map(value)));
    const picture = svg('svg', {id: 'system-graph', width: size, height: size, viewBox: `0 0 ${size} ${size}`,
                                role: 'img', 'aria-label': 'data movement graph'});
    picture.append(svg('defs', {}, Object.values(edgeStyles).map((style) =>
      svg('marker', {id: style.marker, viewBox: '0 0 10 10', refX: 9, refY: 5,
                     markerUnits: 'userSpaceOnUse', markerWidth: 12, markerHeight: 12, orient: 'auto-start-reverse'},
          svg('path', {d: 'M0,0 L10,5 L0,10 z', fill: `rgb(${style.color})`})))));
    const nodeRadius = 34;
    const within = new Map();
    for (const matrix of matrices) {
    const style = edgeStyles[matrix.name] || edgeStyles.copies;
    for (const cell of matrix.cells) {
      const [from, to] = cell;
      const amount = value(cell);
      if (amount === 0) continue;
      if (from === to) { if (matrix.name === 'copies') within.set(from, amount); continue; }
      const a = at.get(from);
      const b = at.get(to);
      const dx = b.x - a.x;
      const dy = b.y - a.y;
      const length = Math.hypot(dx, dy) || 1;
      // Bend to the right of the direction, so that the two directions part.
      const bend = style.bend * length;
      const control = {x: (a.x + b.x) / 2 - (dy / length) * bend, y: (a.y + b.y) / 2 + (dx / length) * bend};
      const start = toward(a, control, nodeRadius);
      const end = toward(b, control, nodeRadius + 4);
      const width = 1.5 + 9 * (amount / max);
      const path = svg('path', {d: `M${start.x},${start.y} Q${control.x},${control.y} ${end.x},${end.y}`,
                                fill: 'none', stroke: `rgba(${style.color},${0.35 + 0.6 * amount / max})`,
                                'stroke-width': width, 'stroke-dasharray': style.dash,
                                'marker-end': `url(#${style.marker})`,
                                'data-matrix': matrix.name, 'data-from': from, 'data-to': to});
      titled(path, `${matrix.name}: ${endLabel(from)} → ${endLabel(to)}: ${text(amount)}`);
      const middle = {x: 0.25 * start.x + 0.5 * control.x + 0.25 * end.x,
                      y: 0.25 * start.y + 0.5 * control.y + 0.25 * end.y};
      picture.append(path, svg('text', {x: middle.x, y: middle.y - 4, 'text-anchor': 'middle',
                                        fill: `rgb(${style.color})`, 'data-matrix': matrix.name,
                                        'data-from': from, 'data-to': to}, text(amount)));
    }
    }
    const device = new Map(data.devices.map((d) => [d.id, d]));
    for (const end of ends) {
      const p = at.get(end);
      const info = device.get(end) && device.get(end).info;
      const node = svg('g', {'data-end': end},
                       svg('circle', {cx: p.x, cy: p.y, r: nodeRadius, fill: end < 0 ? '#fbe9dc' : '#dde8f6',
                                      stroke: end < 0 ? '#d6602e' : '#2f6fbd', 'stroke-width': 1.5}),
                       svg('text', {x: p.x, y: p.y + 4, 'text-anchor': 'middle', 'font-weight': 600}, endLabel(end)));
      if (within.has(end))
        node.append(svg('text', {x: p.x, y: p.y + nodeRadius + 14, 'text-anchor': 'middle', class: 'muted'},
                        'within: ' + text(within.get(end))));
      if (info) titled(node, info.name);
      picture.append(node);
    }
    if (matrices.length < 2) return picture;
    const legend = el('p', {class: 'note', id: 'system-graph-legend'},
                      matrices.map((m) => {
                        const style = edgeStyles[m.name] || edgeStyles.copies;
                        const line = svg('svg', {width: 28, height: 8},
                                         svg('line', {x1: 0, y1: 4, x2: 28, y2: 4, stroke: `rgb(${style.color})`,
                                                      'stroke-width': 2.5, 'stroke-dasharray': style.dash}));
                        return el('span', {class: 'legend'}, line, ' ',
                                  m.name === 'device-initiated' ? 'device-initiated (kernels\' loads and stores)' : m.name);
                      }));
    return el('div', {}, picture, legend);
  }
  function toward(from, to, distance) {
    const dx = to.x - from.x;
    const dy = to.y - from.y;
    const length = Math.hypot(dx, dy) || 1;
    return {x: from.x + (dx / length) * distance, y: from.y + (dy / length) * distance};
  }

  // Rows: where the data came from; columns: where it went.
  function heatmap(matrix, value, text) {
    const ends = data.ends;
    const cells = new Map(matrix.cells.map((cell) => [cell[0] + ',' + cell[1], value(cell)]));
    const max = Math.max(1, ...cells.values());
    const table = el('table', {id: 'system-matrix'});
    table.append(el('thead', {}, el('tr', {}, el('th', {}, 'from \\ to'),
                                   ends.map((end) => el('th', {class: 'r'}, endLabel(end))))));
    const body = el('tbody');
    for (const from of ends) {
      const row = el('tr', {}, el('th', {scope: 'row'}, endLabel(from)));
      for (const to of ends) {
        const amount = cells.get(from + ',' + to) || 0;
        const cell = el('td', {class: 'r', 'data-from': from, 'data-to': to}, text(amount));
        if (amount > 0) cell.style.background = `rgba(47, 111, 189, ${0.12 + 0.75 * amount / max})`;
        row.append(cell);
      }
      body.append(row);
    }
    table.append(body);
    return el('div', {}, el('h3', {}, 'Matrix'), table);
  }

  // --- the object view: each data object, where it went, what touched it --------------
  function objectName(object) { return object.name; }
  function lifetime(object) {
    const from = object.registered_ns === null ? 'start' : format.ms(object.registered_ns) + ' ms';
    const to = object.unregistered_ns === null ? 'end' : format.ms(object.unregistered_ns) + ' ms';
    return from + ' – ' + to;
  }
  function heatStrip(object, width, height, withTitles) {
    const strip = svg('svg', {width, height, class: 'heat', role: 'img',
                              'aria-label': 'bytes touched over the address range'});
    strip.append(svg('rect', {x: 0, y: 0, width, height, fill: '#eef0f4'}));
    if (!object.heat) return strip;
    const max = Math.max(1, ...object.heat);
    const binWidth = width / object.heat.length;
    const binBytes = object.bytes / object.heat.length;
    object.heat.forEach((bytes, i) => {
      if (bytes === 0) return;
      const rect = svg('rect', {x: i * binWidth, y: 0, width: Math.max(binWidth, 0.5), height,
                                fill: `rgba(214, 96, 46, ${0.2 + 0.8 * bytes / max})`});
      if (withTitles)
        titled(rect, `bytes ${Math.floor(i * binBytes)}–${Math.floor((i + 1) * binBytes)}: ${format.bytes(bytes)} touched`);
      strip.append(rect);
    });
    return strip;
  }

  // Device-initiated traffic (kernels' loads and stores), null without.
  const remote = data.device_initiated;
  const remoteBytes = (o) => o.device_initiated.reduce((sum, r) => sum + r.loaded + r.stored, 0);
  function drawObjects(root) {
    root.append(el('h2', {}, 'Objects: data objects and what moved them'));
    if (data.objects.length === 0) {
      root.append(el('p', {class: 'note'}, 'No data objects in this run.'));
      return;
    }
    if (data.limits.objects_shown < data.limits.objects_total)
      root.append(el('p', {class: 'note'}, `The ${data.limits.objects_shown} objects that moved the most, of ${data.limits.objects_total}.`));
    const detail = el('div', {class: 'panel', id: 'object-detail'},
                      el('p', {class: 'note'}, 'Select an object for the calling contexts that moved it.'));
    const kinds = ['HtoD', 'DtoH', 'DtoD', 'HtoH', 'PtoP'];
    const moved = (o) => kinds.reduce((sum, kind) => sum + o.copied[kind], o.memset_bytes);
    const columns = [
      {title: 'object', name: true, cell: objectName, value: (o) => o.name},
      {title: 'kind', cell: (o) => (o.automatic ? 'auto' : o.known ? 'named' : 'id only'),
       value: (o) => (o.automatic ? 1 : 0)},
      {title: 'where', cell: (o) => (o.known ? endLabel(o.device) + (o.memory === 'host' ? '' : ' ' + o.memory) : '-'),
       value: (o) => o.device},
      {title: 'size', align: 'r', cell: (o) => (o.known ? format.bytes(o.bytes) : '-'), value: (o) => o.bytes},
      ...kinds.map((kind) => ({title: kind, align: 'r', cell: (o) => format.bytesCell(o.copied[kind]),
                               value: (o) => o.copied[kind]})),
      {title: 'memset', align: 'r', cell: (o) => format.bytesCell(o.memset_bytes), value: (o) => o.memset_bytes},
      ...(remote ? [{title: 'device-initiated', align: 'r', cell: (o) => format.bytesCell(remoteBytes(o)),
                     value: remoteBytes}] : []),
      {title: 'operations', align: 'r', cell: (o) => format.count(o.operations), value: (o) => o.operations},
      {title: 'lifetime', cell: lifetime, value: (o) => (o.registered_ns === null ? -1 : o.registered_ns)},
      {title: 'touched', cell: (o) => heatStrip(o, 128, 12, false)},
    ];
    // As the summary lists them: most bytes moved first, then by id.
    const rows = data.objects.slice().sort((a, b) => moved(b) - moved(a) || a.id - b.id);
    let table;
    const select = (id) => {
      const object = data.objects.find((o) => o.id === Number(id));
      if (!object) return;
      table.querySelectorAll('tr').forEach((tr) => tr.classList.toggle('selected', tr.dataset.key === String(object.id)));
      detail.replaceChildren(...objectDetail(object));
    };
    table = sortableTable(columns, rows, {id: 'objects-table', key: (o) => o.id, onSelect: (o) => select(o.id)});
    selectInView.objects = select;
    root.append(el('div', {class: 'scroll'}, table), detail);
  }

  function objectDetail(object) {
    const parts = [el('h3', {}, object.name)];
    const facts = [['id', object.id], ['kind', object.automatic ? 'allocation named by ferret' : object.known ? 'registered by the program' : 'known by id only']];
    if (object.known)
      facts.push(['address', object.address], ['size', format.bytes(object.bytes)],
                 ['memory', object.memory + ' on ' + endLabel(object.device)]);
    facts.push(['lifetime', lifetime(object)], ['operations', object.operations]);
    parts.push(el('table', {class: 'facts'}, facts.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v)))));
    if (object.heat) {
      parts.push(el('h3', {}, 'Bytes touched over the address range'), heatStrip(object, 640, 28, true),
                 el('div', {class: 'note'}, `offset 0 … ${format.bytes(object.bytes)}, ${object.heat.length} equal parts`));
    }
    if (object.bytes_not_placed > 0)
      parts.push(el('p', {class: 'note'}, `${format.bytes(object.bytes_not_placed)} moved at no known place in the object (no address, or past its end).`));
    parts.push(el('h3', {}, 'Flows'), sortableTable([
      {title: 'direction', cell: (f) => f.direction, value: (f) => f.direction},
      {title: 'kind', cell: (f) => f.kind, value: (f) => f.kind},
      {title: 'from', cell: (f) => endLabel(f.from), value: (f) => f.from},
      {title: 'to', cell: (f) => endLabel(f.to), value: (f) => f.to},
      {title: 'bytes', align: 'r', cell: (f) => format.bytes(f.bytes), value: (f) => f.bytes},
      {title: 'operations', align: 'r', cell: (f) => format.count(f.operations), value: (f) => f.operations},
    ], object.flows, {id: 'object-flows', sortBy: 4}));
    if (object.device_initiated.length > 0)
      parts.push(el('h3', {}, 'Device-initiated traffic (kernels\' loads and stores, by device pair)'),
                 sortableTable([
                   {title: 'devices', cell: (r) => r.devices, value: (r) => r.devices},
                   {title: 'loaded', align: 'r', cell: (r) => format.bytesCell(r.loaded), value: (r) => r.loaded},
                   {title: 'stored', align: 'r', cell: (r) => format.bytesCell(r.stored), value: (r) => r.stored},
                   {title: 'accesses', align: 'r', cell: (r) => format.count(r.accesses), value: (r) => r.accesses},
                 ], object.device_initiated, {id: 'object-device-initiated', sortBy: 1}));
    const contexts = data.context_objects.filter((row) => row[1] === object.id);
    parts.push(el('h3', {}, 'Calling contexts that moved it'), sortableTable([
      {title: 'context', name: true, cell: (r) => contextPath(r[0], true), value: (r) => contextPath(r[0], true)},
      {title: 'bytes', align: 'r', cell: (r) => format.bytes(r[2]), value: (r) => r[2]},
      {title: 'operations', align: 'r', cell: (r) => format.count(r[3]), value: (r) => r[3]},
    ], contexts, {id: 'object-contexts', sortBy: 1, key: (r) => r[0], onSelect: (r) => jump('code', r[0])}));
    return parts;
  }

  // --- the code view: the calling-context tree with host and GPU metrics ----------------
  const contexts = data.contexts;
  const childrenOf = contexts.map(() => []);
  const depthOf = contexts.map(() => 0);
  contexts.forEach((node, i) => {
    if (i === 0) return;
    childrenOf[node.parent].push(i);
    depthOf[i] = depthOf[node.parent] + 1;  // parents come first
  });
  // Inclusive GPU metrics: children come after their parents.
  const inclusiveGpu = contexts.map((node) => node.gpu.slice());
  for (let i = contexts.length - 1; i > 0; --i)
    inclusiveGpu[i].forEach((value, k) => { inclusiveGpu[contexts[i].parent][k] += value; });
  function contextLabel(node) {
    if (node.domain && !node.synthetic) return node.name + ' [' + node.domain + ']';
    return node.name;
  }
  function contextPath(index, withApiCalls) {
    const names = [];
    for (let at = index; at !== 0; at = contexts[at].parent)
      if (withApiCalls || !contexts[at].api_call) names.push(contexts[at].name);
    return names.length === 0 ? '(no region)' : names.reverse().join('/');
  }
  function sourceLocation(node) {
    if (!node.file) return '';
    return node.line ? node.file + ':' + node.line : node.file;
  }
  // The file's name without its directories (the whole path is the cell's title).
  function shortLocation(node) {
    const where = sourceLocation(node);
    return where.slice(where.lastIndexOf('/') + 1);
  }
  // The subtree's nodes, for what a context moved with everything it called.
  function subtree(index) {
    const nodes = [];
    const stack = [index];
    while (stack.length) {
      const at = stack.pop();
      nodes.push(at);
      stack.push(...childrenOf[at]);
    }
    return new Set(nodes);
  }

  // --- GPU instruction samples (PC sampling), null without -----------------------------
  const samples = data.gpu_samples;
  // As number_format's samples_text writes them: whole counts, else one decimal.
  function samplesText(value) {
    const whole = Math.round(value);
    if (Math.abs(value - whole) < 1e-6 * Math.max(1, Math.abs(value))) return String(whole);
    return value.toFixed(1);
  }
  const stallColors = ['#4caf50', '#9c6ade', '#e0a030', '#d6602e', '#8d6e63', '#2f6fbd', '#00897b',
                       '#c2185b', '#f06292', '#90a4ae', '#607d8b', '#bdbdbd'];
  // A bar of the stall classes' shares, the issued samples first; its title lists them.
  function stallBar(row, width) {
    const bar = svg('svg', {width, height: 12, class: 'stall-bar', role: 'img', 'aria-label': 'samples by stall class'});
    let x = 0;
    const parts = [];
    row.by_stall.forEach((value, k) => {
      if (!(value > 0)) return;
      const share = value / row.samples;
      bar.append(svg('rect', {x, y: 0, width: Math.max(share * width, 0.5), height: 12, fill: stallColors[k]}));
      x += share * width;
      parts.push(`${samples.classes[k].column} ${(100 * share).toFixed(1)}%`);
    });
    return titled(bar, parts.join(', '));
  }
  function stallLegend() {
    return el('p', {class: 'note', id: 'code-stall-legend'}, 'Stall classes: ',
              samples.classes.map((c, k) => el('span', {class: 'legend', title: c.metric},
                                                   el('span', {class: 'swatch', style: `background:${stallColors[k]}`}),
                                                   `${c.column} ${c.describe}`)));
  }
  const byteUnits = {B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40, PiB: 2 ** 50};
  // A table of text cells as the summary prints them (gpu_sample_tables.cpp,
  // remote_traffic_tables.cpp).
  function textTable(table, id) {
    const columns = table.header.map((title, k) => {
      const right = table.alignment[k] === 'r';
      // "12", "62.5%", "7.5 KiB": sorted by value, byte units included.
      const number = (text) => {
        if (text === '-') return -1;
        const [value, unit] = text.split(' ');
        return parseFloat(value) * (byteUnits[unit] || 1);
      };
      return {title, align: right ? 'r' : 'l', name: !right, cell: (r) => r[k], value: right ? (r) => number(r[k]) : (r) => r[k]};
    });
    return sortableTable(columns, table.rows, {id});
  }

  function drawCode(root) {
    root.append(el('h2', {}, 'Code: the calling-context tree'),
                el('p', {class: 'note'}, 'Host time is summed over threads. GPU metrics (HPCToolkit\'s names): ' +
                   'GKER kernel time, GXCOPY copies, GMSET memsets, GMEM allocations, GSYNC synchronization; ' +
                   'inclusive values add what the contexts below launched.'));
    if (data.limits.contexts_shown < data.limits.contexts_total)
      root.append(el('p', {class: 'note'}, `The ${data.limits.contexts_shown} heaviest of ${data.limits.contexts_total} calling contexts, with their callers.`));
    let inclusive = true;
    const expanded = new Set([0]);
    const autoDepth = contexts.length <= 300 ? Infinity : 2;
    contexts.forEach((node, i) => { if (depthOf[i] < autoDepth) expanded.add(i); });
    let selected = null;
    const metricColumns = [
      {title: 'GKER ms', metric: 'kernel_ns', text: format.ms},
      {title: 'kernels', metric: 'kernels', text: format.count},
      {title: 'GXCOPY ms', metric: 'copy_ns', text: format.ms},
      {title: 'GXCOPY bytes', metric: 'copy_bytes', text: format.bytesCell},
      {title: 'GMSET bytes', metric: 'memset_bytes', text: format.bytesCell},
      {title: 'GMEM bytes', metric: 'allocated_bytes', text: format.bytesCell},
      {title: 'GSYNC ms', metric: 'sync_ns', text: format.ms},
    ];
    // Kernels launched in each context with their instruction samples
    // (GINST) and device-initiated bytes (DI), and the GPU lines of each;
    // the contexts' own and inclusive values.
    const gpuKernelsOf = contexts.map(() => []);  // {kernel, samples, remote}
    const gpuLinesOf = new Map();  // "context/kernel" -> {samples: lines, remote: lines}
    const ownSamples = contexts.map(() => 0);
    const ownRemote = contexts.map(() => [0, 0]);  // loaded, stored
    const kernelEntry = (context, kernel) => {
      let entry = gpuKernelsOf[context].find((k) => k.kernel === kernel);
      if (!entry) gpuKernelsOf[context].push(entry = {kernel, samples: null, remote: null});
      return entry;
    };
    const linesEntry = (line) => {
      const key = line.context + '/' + line.kernel;
      if (!gpuLinesOf.has(key)) gpuLinesOf.set(key, {samples: [], remote: []});
      return gpuLinesOf.get(key);
    };
    if (samples) {
      for (const kernel of samples.kernels) {
        kernelEntry(kernel.context, kernel.kernel).samples = kernel;
        ownSamples[kernel.context] += kernel.samples;
      }
      for (const line of samples.lines) linesEntry(line).samples.push(line);
    }
    if (remote) {
      for (const kernel of remote.kernels) {
        kernelEntry(kernel.context, kernel.kernel).remote = kernel;
        ownRemote[kernel.context][0] += kernel.loaded;
        ownRemote[kernel.context][1] += kernel.stored;
      }
      for (const line of remote.lines) linesEntry(line).remote.push(line);
    }
    // The most sampled kernels first, then those that moved the most bytes.
    const kernelSamples = (e) => (e.samples ? e.samples.samples : 0);
    const kernelBytes = (e) => (e.remote ? e.remote.loaded + e.remote.stored : 0);
    for (const list of gpuKernelsOf)
      list.sort((a, b) => kernelSamples(b) - kernelSamples(a) || kernelBytes(b) - kernelBytes(a));
    for (const lists of gpuLinesOf.values()) {
      lists.samples.sort((a, b) => b.samples - a.samples);
      lists.remote.sort((a, b) => b.loaded + b.stored - a.loaded - a.stored);
    }
    const allSamples = ownSamples.slice();
    const allRemote = ownRemote.map((pair) => pair.slice());
    for (let i = contexts.length - 1; i > 0; --i) {
      allSamples[contexts[i].parent] += allSamples[i];
      allRemote[contexts[i].parent][0] += allRemote[i][0];
      allRemote[contexts[i].parent][1] += allRemote[i][1];
    }
    const sampleColumns = samples ? [{title: 'GINST', align: 'r', value: (i) => (inclusive ? allSamples[i] : ownSamples[i])},
                                     {title: 'GPU stalls', value: (i) => ownSamples[i]}] : [];
    const remoteOf = (i) => (inclusive ? allRemote[i] : ownRemote[i]);
    const remoteColumns = remote ? [{title: 'DI loaded', align: 'r', value: (i) => remoteOf(i)[0]},
                                    {title: 'DI stored', align: 'r', value: (i) => remoteOf(i)[1]}] : [];
    // Kernels and GPU lines under their launching context: expanded keys 'k:<context>/<kernel>'.
    const expandedGpu = new Set();
    if ((samples ? samples.lines.length : 0) + (remote ? remote.lines.length : 0) <= 300)
      for (const key of gpuLinesOf.keys()) expandedGpu.add('k:' + key);
    const columns = [
      {title: 'context', value: (i) => contextLabel(contexts[i])},
      {title: 'file:line', value: (i) => sourceLocation(contexts[i])},
      // Beside the source lines, so that a kernel's stalls show next to its launch.
      ...sampleColumns,
      ...remoteColumns,
      {title: 'calls', align: 'r', value: (i) => contexts[i].calls},
      {title: 'host ms (incl)', align: 'r', value: (i) => contexts[i].inclusive_ns},
      {title: 'host ms (excl)', align: 'r', value: (i) => contexts[i].exclusive_ns},
      ...metricColumns.map((c) => ({title: c.title, align: 'r',
                                    value: (i) => gpu(inclusive ? inclusiveGpu[i] : contexts[i].gpu, c.metric)})),
    ];
    let sortBy = columns.findIndex((column) => column.title === 'host ms (incl)');
    let ascending = false;
    const controls = el('div', {class: 'controls'});
    const toggle = el('input', {type: 'checkbox', id: 'code-gpu-inclusive', checked: true});
    toggle.addEventListener('change', () => { inclusive = toggle.checked; draw(); });
    const expandAll = el('button', {class: 'action', type: 'button'}, 'Expand all');
    expandAll.addEventListener('click', () => { contexts.forEach((_, i) => expanded.add(i)); draw(); });
    const collapseAll = el('button', {class: 'action', type: 'button'}, 'Collapse all');
    collapseAll.addEventListener('click', () => { expanded.clear(); expanded.add(0); draw(); });
    controls.append(el('label', {}, toggle, ' GPU metrics inclusive'), expandAll, collapseAll);
    const table = el('table', {id: 'code-tree'});
    const headRow = el('tr');
    const body = el('tbody');
    table.append(el('thead', {}, headRow), body);
    const headers = columns.map((column, index) => {
      const th = el('th', {class: 'sortable' + (column.align === 'r' ? ' r' : ''), scope: 'col'}, column.title);
      th.addEventListener('click', () => {
        ascending = sortBy === index ? !ascending : column.align !== 'r';
        sortBy = index;
        draw();
      });
      headRow.append(th);
      return th;
    });
    const detail = el('div', {class: 'panel', id: 'code-detail'},
                      el('p', {class: 'note'}, 'Select a context for the data objects and device pairs it moved data between.'));
    function ordered(indices) {
      const value = columns[sortBy].value;
      return indices.slice().sort((a, b) => {
        const x = value(a);
        const y = value(b);
        const order = x < y ? -1 : x > y ? 1 : 0;
        return ascending ? order : -order;
      });
    }
    // "-" marks a context without samples, so that the sampled ones stand out.
    function contextSamples(index) {
      const value = inclusive ? allSamples[index] : ownSamples[index];
      return value > 0 ? samplesText(value) : '-';
    }
    function row(index) {
      const node = contexts[index];
      const metrics = inclusive ? inclusiveGpu[index] : node.gpu;
      const hasChildren = childrenOf[index].length > 0 || gpuKernelsOf[index].length > 0;
      const twisty = el('span', {class: 'tree-toggle'}, hasChildren ? (expanded.has(index) ? '▾' : '▸') : '');
      twisty.addEventListener('click', (event) => {
        event.stopPropagation();
        if (expanded.has(index)) expanded.delete(index); else expanded.add(index);
        draw();
      });
      const name = el('td', {class: 'name'}, el('span', {style: `padding-left:${Math.min(depthOf[index], 40) * 14}px`}), twisty,
                      el('span', {class: 'clip'}, index === 0 ? '(whole program)' : contextLabel(node)));
      const tr = el('tr', {'data-context': index, 'data-path': index === 0 ? '' : contextPath(index, true),
                           class: 'selectable' + (node.api_call ? ' api' : '') + (node.synthetic ? ' synthetic' : '') +
                                  (index === selected ? ' selected' : '')},
                    name, el('td', {title: sourceLocation(node) || undefined}, shortLocation(node)),
                    samples ? [el('td', {class: 'r'}, contextSamples(index)),
                               el('td')] : [],
                    remote ? remoteOf(index).map((bytes) => el('td', {class: 'r'}, format.bytesCell(bytes))) : [],
                    el('td', {class: 'r'}, index === 0 ? '' : format.count(node.calls)),
                    el('td', {class: 'r'}, format.ms(node.inclusive_ns)),
                    el('td', {class: 'r'}, format.ms(node.exclusive_ns)),
                    metricColumns.map((c) => el('td', {class: 'r'}, c.text(gpu(metrics, c.metric)))));
      tr.addEventListener('click', () => select(index));
      return tr;
    }
    // The DI cells of a kernel or a GPU line: its bytes loaded and stored.
    function remoteCells(shown) {
      if (!remote) return [];
      return shown ? [el('td', {class: 'r'}, format.bytesCell(shown.loaded)),
                      el('td', {class: 'r'}, format.bytesCell(shown.stored))] : [el('td'), el('td')];
    }
    // A GPU line's device-initiated traffic to one object and device pair (depth + 2).
    function remoteLineRow(index, entry, line) {
      const depth = Math.min(depthOf[index] + 2, 40);
      const where = line.location;
      const label = 'GPU line ' + where.slice(where.lastIndexOf('/') + 1) + ': ' + line.devices +
                    (line.object_id ? ', ' + line.object : '');
      return el('tr', {class: 'gpu-remote', 'data-gpu-context': index, 'data-gpu-kernel': entry.kernel,
                       'data-gpu-location': where, 'data-gpu-devices': line.devices,
                       'data-gpu-object': line.object},
                el('td', {class: 'name', title: label}, el('span', {style: `padding-left:${depth * 14}px`}),
                   el('span', {class: 'clip'}, label)),
                el('td', {title: line.file ? where : undefined}, where.slice(where.lastIndexOf('/') + 1)),
                samples ? [el('td'), el('td')] : [], remoteCells(line),
                el('td'), el('td'), el('td'), metricColumns.map(() => el('td')));
    }
    // A kernel launched from `index` (depth + 1), or one of its GPU lines (depth + 2).
    function gpuRow(index, entry, line) {
      const depth = Math.min(depthOf[index] + (line ? 2 : 1), 40);
      const key = 'k:' + index + '/' + entry.kernel;
      let twisty = '';
      if (!line) {
        twisty = el('span', {class: 'tree-toggle'}, expandedGpu.has(key) ? '▾' : '▸');
        twisty.addEventListener('click', (event) => {
          event.stopPropagation();
          if (expandedGpu.has(key)) expandedGpu.delete(key); else expandedGpu.add(key);
          draw();
        });
      }
      const shown = line || entry.samples;
      const where = line ? line.location : '';
      const label = line ? 'GPU line ' + where.slice(where.lastIndexOf('/') + 1) : entry.kernel;
      return el('tr', {class: line ? 'gpu-line' : 'gpu-kernel', 'data-gpu-context': index,
                       'data-gpu-kernel': entry.kernel, 'data-gpu-location': line ? line.location : undefined},
                el('td', {class: 'name', title: label}, el('span', {style: `padding-left:${depth * 14}px`}), twisty,
                   el('span', {class: 'clip'}, label)),
                el('td', {title: line && line.file ? where : undefined}, where.slice(where.lastIndexOf('/') + 1)),
                !samples ? [] : shown ? [el('td', {class: 'r'}, shown.shown),
                                         el('td', {class: 'stalls'}, stallBar(shown, 120), ' ', shown.stalled_shown + ' stalled',
                                            shown.reasons_shown ? ': ' + shown.reasons_shown : '')]
                                      : [el('td'), el('td')],
                remoteCells(line ? null : entry.remote),
                el('td'), el('td'), el('td'), metricColumns.map(() => el('td')));
    }
    function gpuRows(index) {
      const rows = [];
      for (const kernel of gpuKernelsOf[index]) {
        rows.push(gpuRow(index, kernel, null));
        if (!expandedGpu.has('k:' + index + '/' + kernel.kernel)) continue;
        const lines = gpuLinesOf.get(index + '/' + kernel.kernel) || {samples: [], remote: []};
        for (const line of lines.samples) rows.push(gpuRow(index, kernel, line));
        for (const line of lines.remote) rows.push(remoteLineRow(index, kernel, line));
      }
      return rows;
    }
    function draw() {
      headers.forEach((th, index) => {
        if (index === sortBy) th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
        else th.removeAttribute('aria-sort');
      });
      // Depth first, without recursion: call paths can be deep.
      const rows = [];
      const pending = [0];
      while (pending.length) {
        const index = pending.pop();
        rows.push(row(index));
        if (!expanded.has(index)) continue;
        rows.push(...gpuRows(index));
        pending.push(...ordered(childrenOf[index]).reverse());
      }
      body.replaceChildren(...rows);
    }
    function select(index) {
      index = Number(index);
      if (!(index >= 0 && index < contexts.length)) return;
      selected = index;
      for (let at = contexts[index].parent; at !== 0; at = contexts[at].parent) expanded.add(at);
      draw();
      const tr = body.querySelector(`tr[data-context="${index}"]`);
      if (tr && tr.scrollIntoView) tr.scrollIntoView({block: 'nearest'});
      detail.replaceChildren(...contextDetail(index));
    }
    selectInView.code = select;
    draw();
    if (samples) root.append(stallLegend());
    root.append(controls, el('div', {class: 'scroll'}, table), detail);

    if (samples) {
      root.append(el('h3', {}, 'GPU instruction sampling'),
                  el('ul', {id: 'code-gpu-sampling'}, samples.sampling.map((line) => el('li', {}, line))));
      if (samples.by_line.rows.length > 0)
        root.append(el('h3', {}, 'GPU instructions by source line'),
                    el('p', {class: 'note'}, 'Over all calling contexts; share: of all instruction samples. ' +
                       '+0x…: an instruction of a kernel without line information.'),
                    el('div', {class: 'scroll'}, textTable(samples.by_line, 'code-gpu-lines')));
      if (samples.by_context.rows.length > 0)
        root.append(el('h3', {}, 'GPU stalls by calling context (shares of the row\'s samples)'),
                    el('div', {class: 'scroll'}, textTable(samples.by_context, 'code-gpu-stalls')));
      const leftOut = samples.by_line.total - samples.by_line.rows.length;
      if (leftOut > 0) root.append(el('p', {class: 'note'}, `${leftOut} more lines not shown.`));
    }
    if (remote) {
      const rest = (table, noun) => {
        const leftOut = table.total - table.rows.length;
        return leftOut > 0 ? el('p', {class: 'note'}, `… ${leftOut} more ${noun}${leftOut === 1 ? '' : 's'}: ${table.rest}`) : null;
      };
      append(root, [el('h3', {}, 'Device-initiated traffic (kernels\' loads and stores to other devices\' and host memory)'),
                  el('p', {id: 'code-remote-totals'}, remote.totals),
                  el('p', {class: 'note'}, 'DI loaded, DI stored: the tree\'s device-initiated bytes. ' +
                     '← loads (bytes from the memory\'s device to the kernel\'s), → stores and atomics; ' +
                     '+0x…: an instruction of a kernel without line information.'),
                  el('div', {class: 'scroll'}, textTable(remote.by_line, 'code-remote-lines')), rest(remote.by_line, 'row'),
                  el('h3', {}, 'Device-initiated traffic by calling context'),
                  el('div', {class: 'scroll'}, textTable(remote.by_context, 'code-remote-contexts')),
                  rest(remote.by_context, 'row')]);
    }

    if (data.paths.length > 0)
      root.append(el('h3', {}, 'GPU work per region path (API calls folded into their region, as in the summary)'),
                sortableTable([
                  ...metricColumns.map((c) => ({title: c.title, align: 'r', cell: (r) => c.text(gpu(r.gpu, c.metric)),
                                                value: (r) => gpu(r.gpu, c.metric)})),
                  {title: 'context', name: true, cell: (r) => r.path, value: (r) => r.path},
                ], data.paths.slice().sort((a, b) => {
                  const x = gpu(a.gpu, 'kernel_ns') + gpu(a.gpu, 'copy_ns');
                  const y = gpu(b.gpu, 'kernel_ns') + gpu(b.gpu, 'copy_ns');
                  return y - x || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
                }), {id: 'code-paths', key: (r) => r.contexts[0], onSelect: (r) => select(r.contexts[0])}));
    const regionLabel = (r) => (r.domain ? r.name + ' [' + r.domain + ']' : r.name);
    root.append(el('h3', {}, 'Host regions by name (time counted once where a region nests in itself)'),
                sortableTable([
                  {title: 'calls', align: 'r', cell: (r) => format.count(r.calls), value: (r) => r.calls},
                  {title: 'total ms', align: 'r', cell: (r) => format.ms(r.inclusive_ns), value: (r) => r.inclusive_ns},
                  {title: 'region', name: true, cell: regionLabel, value: regionLabel},
                ], data.regions, {id: 'code-regions', sortBy: 1}));
    if (data.counters.length > 0)
      root.append(el('h3', {}, 'Counters (samples of all threads)'),
                  sortableTable([
                    {title: 'samples', align: 'r', cell: (r) => format.count(r.samples), value: (r) => r.samples},
                    ...['min', 'mean', 'max', 'last'].map((title, k) => ({
                      title, align: 'r', cell: (r) => r.shown[k], value: (r) => r[title]})),
                    {title: 'counter', name: true, cell: regionLabel, value: regionLabel},
                  ], data.counters, {id: 'code-counters', sortBy: 0}));
    if (data.marks.length > 0)
      root.append(el('h3', {}, 'Marks'),
                  sortableTable([
                    {title: 'count', align: 'r', cell: (r) => format.count(r.count), value: (r) => r.count},
                    {title: 'mark', name: true, cell: regionLabel, value: regionLabel},
                  ], data.marks, {id: 'code-marks', sortBy: 0}));
  }

  function contextDetail(index) {
    const node = contexts[index];
    const parts = [el('h3', {}, index === 0 ? '(whole program)' : contextPath(index, true))];
    const facts = [];
    if (node.function) facts.push(['function', node.function]);
    if (node.file) facts.push(['source', sourceLocation(node)]);
    if (index !== 0) facts.push(['calls', format.count(node.calls)]);
    facts.push(['host time', `${format.ms(node.inclusive_ns)} ms inclusive, ${format.ms(node.exclusive_ns)} ms exclusive`]);
    const all = inclusiveGpu[index];
    facts.push(['kernels', `${gpu(all, 'kernels')} (${format.ms(gpu(all, 'kernel_ns'))} ms)`],
               ['copies', `${gpu(all, 'copies')} (${format.bytes(gpu(all, 'copy_bytes'))}, ${format.ms(gpu(all, 'copy_ns'))} ms)`],
               ['memsets', `${gpu(all, 'memsets')} (${format.bytes(gpu(all, 'memset_bytes'))})`],
               ['allocations', `${gpu(all, 'allocations')} (${format.bytes(gpu(all, 'allocated_bytes'))})`],
               ['synchronizations', `${gpu(all, 'syncs')} (${format.ms(gpu(all, 'sync_ns'))} ms)`]);
    parts.push(el('table', {class: 'facts'}, facts.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v)))));
    const nodes = subtree(index);
    const byObject = new Map();
    for (const [context, object, bytes, operations] of data.context_objects) {
      if (!nodes.has(context)) continue;
      const sum = byObject.get(object) || {object, bytes: 0, operations: 0};
      sum.bytes += bytes;
      sum.operations += operations;
      byObject.set(object, sum);
    }
    const objects = new Map(data.objects.map((o) => [o.id, o]));
    parts.push(el('h3', {}, 'Data objects moved here and below'), sortableTable([
      {title: 'object', name: true, cell: (r) => (objects.get(r.object) || {name: 'data object ' + r.object}).name,
       value: (r) => (objects.get(r.object) || {name: ''}).name},
      {title: 'bytes', align: 'r', cell: (r) => format.bytes(r.bytes), value: (r) => r.bytes},
      {title: 'operations', align: 'r', cell: (r) => format.count(r.operations), value: (r) => r.operations},
    ], [...byObject.values()], {id: 'code-objects', sortBy: 1, key: (r) => r.object, onSelect: (r) => jump('objects', r.object)}));
    const byPair = new Map();
    for (const [context, from, to, bytes, operations] of data.context_traffic) {
      if (!nodes.has(context)) continue;
      const key = from + ',' + to;
      const sum = byPair.get(key) || {from, to, bytes: 0, operations: 0};
      sum.bytes += bytes;
      sum.operations += operations;
      byPair.set(key, sum);
    }
    parts.push(el('h3', {}, 'Device pairs'), sortableTable([
      {title: 'from', cell: (r) => endLabel(r.from), value: (r) => r.from},
      {title: 'to', cell: (r) => endLabel(r.to), value: (r) => r.to},
      {title: 'bytes', align: 'r', cell: (r) => format.bytes(r.bytes), value: (r) => r.bytes},
      {title: 'operations', align: 'r', cell: (r) => format.count(r.operations), value: (r) => r.operations},
    ], [...byPair.values()], {id: 'code-pairs', sortBy: 2}));
    return parts;
  }

  // --- the device view: per GPU, kernels, copies, memory and streams over time ---------
  function kernelTable(kernels, id) {
    return sortableTable([
      {title: 'calls', align: 'r', cell: (k) => format.count(k.calls), value: (k) => k.calls},
      {title: 'total ms', align: 'r', cell: (k) => format.ms(k.total_ns), value: (k) => k.total_ns},
      {title: 'mean µs', align: 'r', cell: (k) => format.meanUs(k.total_ns, k.calls), value: (k) => k.total_ns / k.calls},
      {title: 'occupancy', align: 'r', cell: (k) => format.percent(k.occupancy_ppm_sum, k.occupancy_launches),
       value: (k) => (k.occupancy_launches ? k.occupancy_ppm_sum / k.occupancy_launches : -1)},
      {title: 'registers', align: 'r', cell: (k) => format.count(k.registers), value: (k) => k.registers},
      {title: 'shared/block', align: 'r', cell: (k) => format.bytesCell(k.shared_memory_per_block),
       value: (k) => k.shared_memory_per_block},
      ...(samples ? [
        {title: 'GINST', align: 'r', cell: (k) => k.samples_shown, value: (k) => k.samples},
        {title: 'STL_ANY', align: 'r', cell: (k) => k.stalled_shown, value: (k) => parseFloat(k.stalled_shown) || -1},
        {title: 'GSAMP:UTIL', align: 'r', cell: (k) => k.utilization_shown,
         value: (k) => parseFloat(k.utilization_shown) || -1},
      ] : []),
      {title: 'kernel', name: true, cell: (k) => k.name, value: (k) => k.name},
    ], kernels, {id, sortBy: 1});
  }

  function drawDevices(root) {
    root.append(el('h2', {}, 'Devices'));
    if (data.devices.length === 0) {
      root.append(el('p', {class: 'note'}, 'No GPU in this run.'));
      return;
    }
    if (data.kernels.length > 0)
      root.append(el('h3', {}, 'Kernels of all devices'), el('div', {class: 'scroll'}, kernelTable(data.kernels, 'kernels-all')));
    const span = Math.max(run.duration_ns, 1);
    for (const device of data.devices) {
      const section = el('section', {id: 'device-' + device.id});
      const info = device.info;
      const title = 'GPU ' + device.id + (info ? ': ' + info.name : '');
      section.append(el('h2', {}, title));
      if (info)
        section.append(el('p', {class: 'note'}, `compute capability ${info.compute_capability}, ` +
                          `${info.multiprocessors} multiprocessors, ${format.bytes(info.global_memory_bytes)}`));
      if (device.kernels.length > 0) {
        section.append(el('h3', {}, 'Kernels'), el('div', {class: 'scroll'}, kernelTable(device.kernels, `device-${device.id}-kernels`)));
        if (device.kernels_total > device.kernels.length)
          section.append(el('p', {class: 'note'}, `The ${device.kernels.length} longest of ${device.kernels_total} kernels.`));
      }
      const transfers = device.copies.slice();
      const [memsets, memsetBytes, memsetNs] = device.memsets;
      if (memsets > 0) transfers.push({kind: 'memset', count: memsets, bytes: memsetBytes, ns: memsetNs});
      if (transfers.length > 0)
        section.append(el('h3', {}, 'Copies and memsets'), sortableTable([
          {title: 'direction', cell: (r) => r.kind, value: (r) => r.kind},
          {title: 'count', align: 'r', cell: (r) => format.count(r.count), value: (r) => r.count},
          {title: 'bytes', align: 'r', cell: (r) => format.bytes(r.bytes), value: (r) => r.bytes},
          {title: 'total ms', align: 'r', cell: (r) => format.ms(r.ns), value: (r) => r.ns},
          {title: 'mean GB/s', align: 'r', cell: (r) => format.rate(r.bytes, r.ns), value: (r) => (r.ns ? r.bytes / r.ns : -1)},
        ], transfers, {id: `device-${device.id}-copies`}));
      if (device.memory_last.some((value) => value !== null))
        section.append(el('h3', {}, 'Live memory over time'), memoryChart(device, span));
      if (device.streams.length > 0)
        section.append(el('h3', {}, 'Streams: share of each interval busy'), streamChart(device, span));
      root.append(section);
    }
  }

  // Buckets of the run's time grid that fall inside the run.
  function bucketsIn(span) { return Math.min(run.time_buckets, Math.ceil(span / run.bucket_ns)); }

  function memoryChart(device, span) {
    const width = 720;
    const height = 140;
    const left = 70;
    const buckets = bucketsIn(span);
    // Per bucket the highest live value, carrying the last one over buckets without a change.
    const values = [];
    let live = 0;
    for (let i = 0; i < buckets; ++i) {
      values.push(Math.max(device.memory_peak[i], live));
      if (device.memory_last[i] !== null) live = device.memory_last[i];
    }
    const max = Math.max(1, ...values);
    const step = (width - left) / buckets;
    let d = `M${left},${height - 20}`;
    values.forEach((value, i) => {
      const y = height - 20 - (value / max) * (height - 30);
      d += ` L${left + i * step},${y} L${left + (i + 1) * step},${y}`;
    });
    d += ` L${left + buckets * step},${height - 20} z`;
    return svg('svg', {id: `device-${device.id}-memory`, width, height, role: 'img', 'aria-label': 'live memory over time'},
               svg('path', {d, fill: 'rgba(47,111,189,0.35)', stroke: '#2f6fbd', 'stroke-width': 1}),
               svg('line', {x1: left, y1: height - 20, x2: width, y2: height - 20, class: 'axis'}),
               svg('text', {x: left - 6, y: 16, 'text-anchor': 'end'}, format.bytes(max)),
               svg('text', {x: left - 6, y: height - 20, 'text-anchor': 'end'}, '0'),
               svg('text', {x: left, y: height - 4, class: 'muted'}, '0 s'),
               svg('text', {x: width, y: height - 4, 'text-anchor': 'end', class: 'muted'},
                   format.seconds(buckets * run.bucket_ns) + ' s'));
  }

  function streamChart(device, span) {
    const width = 720;
    const left = 120;
    const rowHeight = 18;
    const buckets = bucketsIn(span);
    const step = (width - left) / buckets;
    const height = device.streams.length * rowHeight + 22;
    const chart = svg('svg', {id: `device-${device.id}-streams`, width, height, role: 'img',
                              'aria-label': 'stream utilisation over time'});
    device.streams.forEach((stream, row) => {
      const y = row * rowHeight;
      const share = stream.busy_ns / span;
      chart.append(titled(svg('text', {x: 0, y: y + 13}, `stream ${stream.id}`),
                          `${stream.operations} operations, busy ${format.ms(stream.busy_ns)} ms`),
                   svg('rect', {x: left, y: y + 2, width: width - left, height: rowHeight - 4, fill: '#eef0f4'}));
      for (let i = 0; i < buckets; ++i) {
        const busy = stream.busy[i];
        if (busy <= 0) continue;
        const fraction = Math.min(1, busy / run.bucket_ns);
        chart.append(titled(svg('rect', {x: left + i * step, y: y + 2, width: Math.max(step, 0.5), height: rowHeight - 4,
                                         fill: `rgba(47,111,189,${0.15 + 0.85 * fraction})`}),
                            `${(100 * fraction).toFixed(1)}% busy`));
      }
      chart.append(svg('text', {x: left - 8, y: y + 13, 'text-anchor': 'end', class: 'muted'},
                       (100 * Math.min(1, share)).toFixed(1) + '%'));
    });
    chart.append(svg('text', {x: left, y: height - 4, class: 'muted'}, '0 s'),
                 svg('text', {x: width, y: height - 4, 'text-anchor': 'end', class: 'muted'},
                     format.seconds(buckets * run.bucket_ns) + ' s'));
    return chart;
  }

  // --- the run: facts, memory, losses, what was counted but not recorded -------------
  function drawRun(root) {
    root.append(el('h2', {}, 'Run'));
    const started = new Date(Number(BigInt(run.start_unix_ns) / 1000000n));
    const facts = [['executable', run.executable], ['process id', run.pid], ['host', run.host],
                   ['command line', run.command_line], ['started', started.toISOString()],
                   ['duration', format.seconds(run.duration_ns) + ' s'], ['clock', run.clock],
                   ['GPU operations', run.gpu_operations], ['ferret', run.ferret_version]];
    root.append(el('table', {class: 'facts', id: 'run-facts'},
                   facts.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {class: 'name'}, v)))));
    root.append(el('h3', {}, 'Losses'));
    root.append(data.losses.length === 0
                  ? el('p', {id: 'run-losses'}, 'Nothing was lost.')
                  : el('ul', {id: 'run-losses'}, data.losses.map((loss) => el('li', {}, loss))));
    if (data.memory.length > 0)
      root.append(el('h3', {}, 'Memory'), sortableTable([
        {title: 'device', cell: (r) => endLabel(r.device), value: (r) => r.device},
        {title: 'memory', cell: (r) => r.memory, value: (r) => r.memory},
        {title: 'allocations', align: 'r', cell: (r) => format.count(r.allocations), value: (r) => r.allocations},
        {title: 'allocated', align: 'r', cell: (r) => format.bytes(r.bytes_allocated), value: (r) => r.bytes_allocated},
        {title: 'releases', align: 'r', cell: (r) => format.count(r.releases), value: (r) => r.releases},
        {title: 'peak live', align: 'r', cell: (r) => format.bytes(r.peak), value: (r) => r.peak},
      ], data.memory, {id: 'run-memory'}));
    if (data.unrecorded_api.length > 0)
      root.append(el('h3', {}, 'API calls counted, not recorded'), sortableTable([
        {title: 'calls', align: 'r', cell: (r) => format.count(r.calls), value: (r) => r.calls},
        {title: 'collector', cell: (r) => r.collector, value: (r) => r.collector},
        {title: 'call', name: true, cell: (r) => r.call, value: (r) => r.call},
      ], data.unrecorded_api, {id: 'run-unrecorded', sortBy: 0}));
    const metadata = (title, list, id) => {
      if (list.length === 0) return;
      root.append(el('h3', {}, title), el('table', {class: 'facts', id},
                  list.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {class: 'name'}, v === null ? '' : v)))));
    };
    metadata('Program metadata', data.metadata.user, 'run-user-metadata');
    metadata('Runtime metadata', data.metadata.runtime, 'run-runtime-metadata');
  }

  // --- the rank view (rank 0 of an MPI job): how the ranks differ ---------------------
  // Columns of the heat map at most: more ranks share a column, which shows their largest.
  const widestHeatMap = 512;
  function drawRanks(root) {
    root.append(el('h2', {}, `Ranks: ${job.size} MPI ranks`));
    root.append(el('p', {class: 'note'}, 'Time per rank; imbalance = (max − mean) / max. ' +
                   `The busiest rank (most time in regions outside MPI calls) is rank ${job.busiest_rank}.`));
    for (const [title, rows, leftOut, id] of [['Regions', job.regions, job.regions_left_out, 'ranks-regions'],
                                              ['MPI calls', job.mpi_calls, job.mpi_calls_left_out, 'ranks-mpi']]) {
      if (rows.length === 0) continue;
      root.append(el('h3', {}, title + ': inclusive time per rank'), rankHeatMap(rows, id + '-heat'));
      const columns = [
        {title: 'ranks', align: 'r', cell: (r) => format.count(r.ranks), value: (r) => r.ranks},
        {title: 'calls', align: 'r', cell: (r) => format.count(r.calls), value: (r) => r.calls},
        {title: 'min ms', align: 'r', cell: (r) => format.ms(r.min), value: (r) => r.min},
        {title: 'mean ms', align: 'r', cell: (r) => format.ms(Math.round(r.mean)), value: (r) => r.mean},
        {title: 'max ms', align: 'r', cell: (r) => format.ms(r.max), value: (r) => r.max},
        {title: 'max rank', align: 'r', cell: (r) => String(r.max_rank), value: (r) => r.max_rank},
        {title: 'imbalance', align: 'r', cell: (r) => (100 * r.imbalance).toFixed(1) + '%', value: (r) => r.imbalance},
      ];
      if (rows[0].bytes_sent !== undefined)
        columns.push({title: 'bytes sent', align: 'r', cell: (r) => format.bytes(r.bytes_sent), value: (r) => r.bytes_sent},
                     {title: 'bytes received', align: 'r', cell: (r) => format.bytes(r.bytes_received),
                      value: (r) => r.bytes_received});
      columns.push({title: 'name', name: true, cell: (r) => r.name, value: (r) => r.name});
      root.append(sortableTable(columns, rows, {id, sortBy: 4}));
      if (leftOut > 0) root.append(el('p', {class: 'note'}, `${leftOut} more not shown.`));
    }
    root.append(el('h3', {}, `The busiest rank's calling contexts (rank ${job.busiest_rank})`), busiestTree());
    root.append(el('h3', {}, 'Point-to-point bytes between ranks'), messageMatrix());
  }
  function rankHeatMap(rows, id) {
    const columns = Math.min(job.size, widestHeatMap);
    const cellWidth = Math.max(2, Math.floor(720 / columns)), cellHeight = 14, left = 200;
    const picture = svg('svg', {id, width: left + columns * cellWidth, height: rows.length * cellHeight,
                                role: 'img', 'aria-label': 'ranks by regions'});
    rows.forEach((row, y) => {
      const label = row.name.length > 30 ? row.name.slice(0, 29) + '…' : row.name;
      picture.append(svg('text', {x: left - 6, y: y * cellHeight + cellHeight - 3, 'text-anchor': 'end',
                                  'font-size': 11}, label));
      const largest = Math.max(1, row.max);
      for (let column = 0; column < columns; ++column) {
        const first = Math.floor(column * job.size / columns), last = Math.floor((column + 1) * job.size / columns);
        let value = 0, at = first;
        for (let rank = first; rank < last; ++rank)
          if (row.time_ns[rank] > value) { value = row.time_ns[rank]; at = rank; }
        picture.append(svg('rect', {x: left + column * cellWidth, y: y * cellHeight, width: cellWidth,
                                    height: cellHeight - 1, fill: `rgba(47, 111, 189, ${0.05 + 0.9 * value / largest})`},
                           svg('title', {}, `${row.name}, rank ${at}: ${format.ms(value)} ms`)));
      }
    });
    return el('div', {class: 'heat'}, picture,
              el('p', {class: 'note'}, `Columns: ranks 0 to ${job.size - 1}` +
                 `${columns < job.size ? ' (several per column, the largest shown)' : ''}; each row's ` +
                 'darkest cell is its largest time.'));
  }
  function busiestTree() {
    const tree = job.busiest_tree;
    if (tree.length === 0) return el('p', {class: 'note'}, 'Not available.');
    const depth = [0];
    const rows = [];
    for (let i = 1; i < tree.length; ++i) {
      depth[i] = depth[tree[i].parent] + 1;
      rows.push(i);
    }
    // Depth first, children in the order they were first seen.
    const children = tree.map(() => []);
    for (const i of rows) children[tree[i].parent].push(i);
    const ordered = [];
    const pending = children[0].slice().reverse();
    while (pending.length > 0) {
      const i = pending.pop();
      ordered.push(i);
      pending.push(...children[i].slice().reverse());
    }
    const table = el('table', {id: 'ranks-busiest-tree'}, el('thead', {}, el('tr', {},
      el('th', {}, 'context'), el('th', {class: 'r'}, 'calls'), el('th', {class: 'r'}, 'inclusive ms'),
      el('th', {class: 'r'}, 'exclusive ms'))));
    table.append(el('tbody', {}, ordered.map((i) => el('tr', {},
      el('td', {class: 'name', style: `padding-left: ${depth[i] - 1}em`},
         tree[i].name + (tree[i].domain ? ` [${tree[i].domain}]` : '')),
      el('td', {class: 'r'}, format.count(tree[i].calls)),
      el('td', {class: 'r'}, format.ms(tree[i].inclusive_ns)),
      el('td', {class: 'r'}, format.ms(tree[i].exclusive_ns))))));
    return table;
  }
  function messageMatrix() {
    if (job.messages.length === 0) return el('p', {class: 'note'}, 'No point-to-point messages.');
    const largest = Math.max(...job.messages.map((cell) => cell[2]));
    if (job.size > 64)
      return sortableTable([
        {title: 'from', align: 'r', cell: (c) => String(c[0]), value: (c) => c[0]},
        {title: 'to', align: 'r', cell: (c) => String(c[1]), value: (c) => c[1]},
        {title: 'messages', align: 'r', cell: (c) => format.count(c[3]), value: (c) => c[3]},
        {title: 'bytes', align: 'r', cell: (c) => format.bytes(c[2]), value: (c) => c[2]},
      ], job.messages, {id: 'ranks-messages', sortBy: 3});
    const cells = new Map(job.messages.map((cell) => [cell[0] + ',' + cell[1], cell[2]]));
    const ranks = [...Array(job.size).keys()];
    const table = el('table', {id: 'ranks-messages'});
    table.append(el('thead', {}, el('tr', {}, el('th', {}, 'from \\ to'),
                                   ranks.map((rank) => el('th', {class: 'r'}, String(rank))))));
    table.append(el('tbody', {}, ranks.map((from) => el('tr', {}, el('th', {scope: 'row'}, String(from)),
      ranks.map((to) => {
        const amount = cells.get(from + ',' + to) || 0;
        const cell = el('td', {class: 'r'}, amount > 0 ? format.bytes(amount) : '');
        if (amount > 0) cell.style.background = `rgba(47, 111, 189, ${0.12 + 0.75 * amount / largest})`;
        return cell;
      })))));
    return table;
  }

  // --- start --------------------------------------------------------------------------
  document.title = `ferret report: ${run.executable} (pid ${run.pid})`;
  document.getElementById('title').textContent = document.title;
  document.getElementById('subtitle').textContent =
    `${run.host}, ${format.seconds(run.duration_ns)} s, ${run.gpu_operations} GPU operations`;
  for (const view of views) {
    const button = el('button', {type: 'button', role: 'tab', id: 'tab-' + view.id}, view.title);
    button.addEventListener('click', () => { location.hash = view.id; show(view.id); });
    tabs.append(button);
    view.draw(document.getElementById('view-' + view.id));
  }
  window.addEventListener('hashchange', () => follow(location.hash.slice(1)));
  follow(location.hash.slice(1));
  document.body.dataset.ready = 'yes';
})();
