#!/usr/bin/env python3
"""Opens a ferret report in headless Chromium and checks what it shows.

    check_report.py --chromium PATH --screenshots TOOL --work DIR --synthetic PROGRAM
    check_report.py --chromium PATH --screenshots TOOL --work DIR --program PROGRAM ARG...
    check_report.py --chromium PATH --screenshots TOOL --work DIR --page FILE.html --summary-file FILE

--synthetic: PROGRAM DIR writes DIR/synthetic.html and DIR/synthetic-summary.txt
(tests/report/synthetic_gpu_run.cpp). --program: PROGRAM runs with
FERRET_BACKEND=report,summary; the summary is read from its stderr. --page:
a report and its summary made elsewhere (the GPU machine: tests/gpu/report_example.sh).

The page is opened as a person would open it (file://, a real browser) and
its DOM, after the page's script ran, is compared with the summary's text:
every row the summary prints must appear in the page with the same cells.
Names that a hostile program chose must be shown as text, never become
markup or run. Screenshots of the views are left in DIR/screenshots.
Exit status: 0 all checks passed, 1 a check failed, 77 skipped (no Chromium).
"""
import argparse
import html.parser
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

BROWSER_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run']
failures = []
passed = 0


def check(condition, message):
    global passed
    if condition:
        passed += 1
    else:
        failures.append(message)
        print('FAILED: ' + message, file=sys.stderr)


# --- the DOM ------------------------------------------------------------------------

class Element:
    def __init__(self, tag, attributes, parent):
        self.tag, self.attributes, self.parent, self.children = tag, dict(attributes), parent, []

    def text(self):
        return ''.join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.walk()

    def find_all(self, tag):
        return [e for e in self.walk() if e.tag == tag]


VOID = {'meta', 'link', 'br', 'hr', 'img', 'input', 'col', 'area', 'base', 'wbr', 'source'}


class DomBuilder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element('#document', {}, None)
        self.current = self.root

    def handle_starttag(self, tag, attributes):
        element = Element(tag, attributes, self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag, attributes):
        self.current.children.append(Element(tag, attributes, self.current))

    def handle_endtag(self, tag):
        at = self.current
        while at is not None and at.tag != tag:
            at = at.parent
        if at is not None and at.parent is not None:
            self.current = at.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse_dom(text):
    builder = DomBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def by_id(root, identifier):
    for element in root.walk():
        if element.attributes.get('id') == identifier:
            return element
    return None


def table_rows(table):
    """The body rows of a table as lists of cell texts (th or td)."""
    if table is None:
        return []
    body = table.find_all('tbody')
    rows = body[0].find_all('tr') if body else table.find_all('tr')[1:]
    return [[cell.text().strip() for cell in row.children
             if isinstance(cell, Element) and cell.tag in ('td', 'th')] for row in rows]


def table_header(table):
    head = table.find_all('thead')[0] if table is not None and table.find_all('thead') else None
    if head is None:
        return []
    return [cell.text().strip() for cell in head.find_all('th')]


# --- the summary ----------------------------------------------------------------------

def summary_section(summary, heading):
    """The rows of a summary table (cells split on two or more spaces), header first."""
    lines = summary.split('\n')
    if heading not in lines:
        return []
    rows = []
    for line in lines[lines.index(heading) + 1:]:
        if not line.strip():
            break
        if line.startswith('  … '):
            continue
        rows.append(re.split(r' {2,}', line.strip()))
    return rows


def same_name(summary_cell, page_cell):
    """The summary cuts long names with '…' (at the end, or in the middle of paths)."""
    if '…' not in summary_cell:
        return summary_cell == page_cell
    head, tail = summary_cell.split('…', 1)
    return page_cell.startswith(head) and page_cell.endswith(tail) if tail else page_cell.startswith(head)


def contains_row(page_rows, wanted, key_column, message):
    """A page row whose cells equal `wanted` (the key column, or columns, compared as names)."""
    names = key_column if isinstance(key_column, (list, tuple, set)) else [key_column]
    for row in page_rows:
        if len(row) == len(wanted) and all(
                same_name(w, r) if i in names else w == r for i, (w, r) in enumerate(zip(wanted, row))):
            return check(True, message)
    check(False, f'{message}: no row {wanted} among {page_rows[:12]}')


# --- the browser ----------------------------------------------------------------------

def dump_dom(chromium, page, hash_part, profile):
    result = subprocess.run([chromium, *BROWSER_FLAGS, '--user-data-dir=' + profile, '--dump-dom',
                             'file://' + os.path.abspath(page) + '#' + hash_part],
                            capture_output=True, text=True, timeout=120)
    check(result.returncode == 0, f'chromium --dump-dom exit status {result.returncode}')
    return parse_dom(result.stdout)


def png_size(path):
    with open(path, 'rb') as f:
        head = f.read(24)
    if head[:8] != b'\x89PNG\r\n\x1a\n':
        return None
    return struct.unpack('>II', head[16:24])


def compare_with_summary(dom, summary, gpu):
    body = dom.find_all('body')[0]
    check(body.attributes.get('data-ready') == 'yes', 'the page finished drawing (body data-ready)')
    check('data-error' not in body.attributes, 'no script error: ' + body.attributes.get('data-error', ''))
    for view in ('system', 'objects', 'code', 'devices', 'run'):
        section = by_id(dom, 'view-' + view)
        check(section is not None and len(section.text()) > 20, f'the {view} view has content')
        check(by_id(dom, 'tab-' + view) is not None, f'a tab for the {view} view')

    first = summary.split('\n')[0]
    operations = re.search(r', (\d+) GPU operations?$', first)
    facts = {row[0]: row[1] for row in table_rows(by_id(dom, 'run-facts'))}
    check(operations is not None and facts.get('GPU operations') == operations.group(1),
          f'GPU operations: summary "{first}", page {facts.get("GPU operations")}')

    regions = table_rows(by_id(dom, 'code-regions'))
    for wanted in summary_section(summary, 'Host regions')[1:]:
        contains_row(regions, wanted, 2, 'host region ' + wanted[-1][:40])
    check(len(summary_section(summary, 'Host regions')) > 1, 'the summary has host regions')

    paths = table_rows(by_id(dom, 'code-paths'))
    header = summary_section(summary, 'GPU time by calling context')
    if header:
        check(table_header(by_id(dom, 'code-paths')) == header[0], 'the path table has the summary\'s columns')
    for wanted in header[1:]:
        contains_row(paths, wanted, 7, 'GPU work of ' + wanted[-1][:40])

    # The summary's columns of the page's kernel table (which has shared/block, and GINST,
    # STL_ANY and GSAMP:UTIL with instruction samples).
    kernel_header = summary_section(summary, 'Kernels')[:1]
    page_header = table_header(by_id(dom, 'kernels-all'))
    if kernel_header:
        check(all(title in page_header for title in kernel_header[0]),
              f'the kernel table has the summary\'s columns: {page_header}')
        picked = [page_header.index(title) for title in kernel_header[0] if title in page_header]
        kernels = [[row[i] for i in picked] for row in table_rows(by_id(dom, 'kernels-all'))]
        for wanted in summary_section(summary, 'Kernels')[1:]:
            contains_row(kernels, wanted, 5, 'kernel ' + wanted[-1][:40])

    compare_gpu_samples(dom, summary)
    compare_device_initiated(dom, summary)

    copies = summary_section(summary, 'Copies')
    check(table_rows(by_id(dom, 'system-copies')) == copies[1:], f'copies by direction: {copies[1:]}')

    matrix = summary_section(summary, 'Device-to-device bytes')
    if matrix:
        table = by_id(dom, 'system-matrix')
        check(table_header(table) == matrix[0], f'matrix header {matrix[0]}')
        check(table_rows(table) == matrix[1:], f'matrix rows {matrix[1:]} == {table_rows(table)}')

    objects = []
    for row in table_rows(by_id(dom, 'objects-table')):
        # object, kind, where, size, HtoD, DtoH, DtoD, HtoH, PtoP, memset, operations, lifetime, touched
        name = row[0] + (' (auto)' if row[1] == 'auto' else '')
        objects.append([row[3]] + row[4:10] + [name])  # as the summary: size, bytes moved, object
    for wanted in summary_section(summary, 'Data objects')[1:]:
        contains_row(objects, wanted, 7, 'data object ' + wanted[-1][:40])

    counters = summary_section(summary, 'Counters')
    if counters:
        check(table_header(by_id(dom, 'code-counters')) == counters[0], 'the counter table has the summary\'s columns')
    for wanted in counters[1:]:
        contains_row(table_rows(by_id(dom, 'code-counters')), wanted, 5, 'counter ' + wanted[-1][:40])
    marks = summary_section(summary, 'Marks')
    for wanted in marks[1:]:
        contains_row(table_rows(by_id(dom, 'code-marks')), wanted, 1, 'mark ' + wanted[-1][:40])

    memory = summary_section(summary, 'Memory')
    check(table_rows(by_id(dom, 'run-memory')) == memory[1:], f'memory rows {memory[1:]}')

    unrecorded = summary_section(summary, 'API calls counted, not recorded')
    check(table_rows(by_id(dom, 'run-unrecorded'))[:len(unrecorded) - 1] == unrecorded[1:] if unrecorded
          else by_id(dom, 'run-unrecorded') is None, f'unrecorded API calls {unrecorded[1:]}')

    losses = next((line[len('Losses: '):].split(', ') for line in summary.split('\n')
                   if line.startswith('Losses: ')), [])
    shown = [li.text() for li in by_id(dom, 'run-losses').find_all('li')] if by_id(dom, 'run-losses') else None
    check(shown == losses, f'losses {losses} shown as {shown}')
    if gpu:
        check(len(copies) > 1 and len(matrix) > 1 and len(paths) > 0, 'GPU tables are present')


def summary_lines(summary, heading):
    """The lines under a heading up to the next blank line, without their indent."""
    lines = summary.split('\n')
    if heading not in lines:
        return []
    body = []
    for line in lines[lines.index(heading) + 1:]:
        if not line.strip():
            break
        body.append(line.strip())
    return body


def compare_gpu_samples(dom, summary):
    """Instruction samples (PC sampling): the page has the summary's sampling lines and tables."""
    sampling = summary_lines(summary, 'GPU instruction sampling')
    shown = by_id(dom, 'code-gpu-sampling')
    if not sampling:
        check(shown is None, 'no sampling section without instruction samples')
        return
    page_lines = [li.text() for li in shown.find_all('li')] if shown is not None else []
    check(page_lines == [line for line in sampling if not line.startswith('metrics ')],
          f'sampling lines {sampling} shown as {page_lines}')
    for heading, table_id, names in (('GPU instructions by source line', 'code-gpu-lines', [3, 4]),
                                     ('GPU stalls by calling context', 'code-gpu-stalls', None)):
        wanted_rows = summary_section(summary, heading)
        check(len(wanted_rows) > 1, f'the summary has "{heading}"')
        table = by_id(dom, table_id)
        check(table_header(table) == wanted_rows[0], f'{table_id} has the summary\'s columns')
        columns = len(wanted_rows[0])
        for wanted in wanted_rows[1:]:
            contains_row(table_rows(table), wanted, names or [columns - 2, columns - 1],
                         f'{heading}: ' + ' '.join(wanted)[:60])


def compare_device_initiated(dom, summary):
    """Device-initiated traffic: the page has the summary's totals line and tables."""
    lines = summary_lines(summary, 'Device-initiated traffic')
    totals = by_id(dom, 'code-remote-totals')
    if not lines:
        check(totals is None, 'no device-initiated section without device-initiated traffic')
        return
    check(totals is not None and totals.text() == lines[0], f'device-initiated totals {lines[0]}')
    for heading, table_id, skip in (('Device-initiated traffic', 'code-remote-lines', 2),
                                    ('Device-initiated traffic by calling context', 'code-remote-contexts', 0)):
        wanted_rows = summary_section(summary, heading)[skip:]
        check(len(wanted_rows) > 1, f'the summary has "{heading}"')
        table = by_id(dom, table_id)
        check(table_header(table) == wanted_rows[0], f'{table_id} has the summary\'s columns')
        columns = len(wanted_rows[0])
        for wanted in wanted_rows[1:]:
            contains_row(table_rows(table), wanted, list(range(4, columns)) if skip else [columns - 2, columns - 1],
                         f'{heading}: ' + ' '.join(wanted)[:60])


def check_device_initiated_views(chromium, page, summary, profile):
    """The system view's matrix of the kernels' own traffic and its dashed edges,
    the code view's DI columns and rows under the launching call, the object view."""
    matrix = summary_section(summary, "Device-initiated bytes (kernels' loads and stores)")
    check(len(matrix) > 1, 'the summary has the device-initiated matrix')
    system = dump_dom(chromium, page, 'system/device-initiated', profile)
    table = by_id(system, 'system-matrix')
    check(table_header(table) == matrix[0] and table_rows(table) == matrix[1:],
          f'device-initiated matrix {matrix[1:]} == {table_rows(table)}')
    graph = by_id(system, 'system-graph')
    edges = {}
    for path in graph.find_all('path') if graph is not None else []:
        if 'data-matrix' in path.attributes:
            edges[(path.attributes['data-matrix'], path.attributes['data-from'], path.attributes['data-to'])] = path
    labels = {(t.attributes['data-matrix'], t.attributes['data-from'], t.attributes['data-to']): t.text()
              for t in (graph.find_all('text') if graph is not None else []) if 'data-matrix' in t.attributes}
    ends = {'host': '-1', **{f'GPU {n}': str(n) for n in range(16)}}
    wanted = {}
    for row in matrix[1:]:
        for column, cell in zip(matrix[0][1:], row[1:]):
            if cell != '-' and row[0] != column:
                wanted[(ends[row[0]], ends[column])] = cell
    shown = {(f, t): labels.get(('device-initiated', f, t)) for (m, f, t) in edges if m == 'device-initiated'}
    check(shown == wanted, f'device-initiated edges {wanted} drawn as {shown}')
    check(all(path.attributes.get('stroke-dasharray') for (m, _, _), path in edges.items() if m == 'device-initiated')
          and not any(path.attributes.get('stroke-dasharray') for (m, _, _), path in edges.items() if m == 'copies')
          and any(m == 'copies' for (m, _, _) in edges),
          'device-initiated edges dashed beside the solid copies')

    code = dump_dom(chromium, page, 'code', profile)
    tree = by_id(code, 'code-tree')
    header = table_header(tree)
    check('DI loaded' in header and 'DI stored' in header, f'the tree has DI columns: {header}')
    if 'DI loaded' not in header:
        return
    loaded, stored = header.index('DI loaded'), header.index('DI stored')
    launch = [row for row in tree.find_all('tr') if row.attributes.get('data-path') == 'main/solve/step/cudaLaunchKernel']
    context = launch[0].attributes.get('data-context') if launch else None
    rows = {}
    for row in tree.find_all('tr'):
        if row.attributes.get('data-gpu-context') == context:
            cells = [c.text().strip() for c in row.children if isinstance(c, Element) and c.tag == 'td']
            rows[(row.attributes.get('class'), row.attributes.get('data-gpu-kernel'),
                  row.attributes.get('data-gpu-location'), row.attributes.get('data-gpu-devices'))] = cells
    stencil = 'stencil(double const*, double*, int)'
    kernel = rows.get(('gpu-kernel', stencil, None, None))
    check(kernel is not None and kernel[loaded] == '4.0 MiB' and kernel[stored] == '256.0 KiB',
          f'the stencil\'s device-initiated bytes under its launch: {kernel}')
    line = rows.get(('gpu-remote', stencil, '/src/solver/stencil.cu:44', 'GPU 0 ← GPU 1'))
    check(line is not None and line[1] == 'stencil.cu:44' and line[loaded] == '4.0 MiB' and line[stored] == '-'
          and 'halo on GPU 1' in line[0], f'line 44 loads the halo from GPU 1: {line}')
    host = rows.get(('gpu-remote', 'plain_c_kernel', '+0x1c0', 'GPU 1 ← host'))
    check(host is not None and host[loaded] == '64.0 KiB', f'host memory read without line information: {host}')
    check(launch and launch[0].find_all('td')[loaded].text().strip() == '4.1 MiB',
          'the launching context\'s DI loaded (its kernels together)')

    selected = dump_dom(chromium, page, 'objects/2', profile)
    rows = table_rows(by_id(selected, 'object-device-initiated'))
    check(rows == [['GPU 1 → GPU 0', '-', '4.0 KiB', '512']], f'the device grid\'s device-initiated traffic: {rows}')


def check_gpu_tree(dom):
    """The code view's tree: kernels and their GPU lines under the context that launched them."""
    tree = by_id(dom, 'code-tree')
    header = table_header(tree)
    check('GINST' in header, f'the tree has a GINST column: {header}')
    if 'GINST' not in header:
        return
    column = header.index('GINST')
    launch = [row for row in tree.find_all('tr') if row.attributes.get('data-path') == 'main/solve/step/cudaLaunchKernel']
    check(len(launch) == 1, 'the tree shows the launching context')
    context = launch[0].attributes.get('data-context') if launch else None
    gpu_rows = {}
    for row in tree.find_all('tr'):
        if row.attributes.get('data-gpu-context') != context:
            continue
        cells = [cell.text().strip() for cell in row.children if isinstance(cell, Element) and cell.tag == 'td']
        gpu_rows[(row.attributes.get('class'), row.attributes.get('data-gpu-kernel'),
                  row.attributes.get('data-gpu-location'))] = cells
    stencil = 'stencil(double const*, double*, int)'
    kernel = gpu_rows.get(('gpu-kernel', stencil, None))
    check(kernel is not None and kernel[column] == '559.8', f'the stencil kernel under its launch: {kernel}')
    line = gpu_rows.get(('gpu-line', stencil, '/src/solver/stencil.cu:42'))
    check(line is not None and line[1] == 'stencil.cu:42' and line[column] == '459.8'
          and 'long_scoreboard 87%, selected 13%' in line[column + 1] and '86.9% stalled' in line[column + 1],
          f'line 42 with its stalls: {line}')
    offset = gpu_rows.get(('gpu-line', 'plain_c_kernel', '+0x1a0'))
    check(offset is not None and offset[column] == '30' and 'wait 100%' in offset[column + 1],
          f'an instruction without line information: {offset}')
    check(launch and launch[0].find_all('td')[column].text().strip() == '589.8',
          'the launching context\'s GINST')


def check_hostile_names(dom, page_text):
    body = dom.find_all('body')[0]
    check('data-pwned' not in body.attributes, 'no injected script ran')
    check(not dom.find_all('img'), 'no name became an <img> element')
    scripts = dom.find_all('script')
    check(len(scripts) == 3, f'only the page\'s three script elements ({len(scripts)})')
    names = [row[0] for row in table_rows(by_id(dom, 'objects-table'))]
    for expected in ('<img src=x onerror="document.body.dataset.pwned=\'img\'">',
                     "</script><script>document.body.dataset.pwned='script'</script>",
                     'a & b "quoted" \'single\' \\ back',
                     'bytes \\x1b[31m\\xff\\xfe\\x01 end'):
        check(expected in names, f'name shown as text: {expected}')
    huge = [name for name in names if name.startswith('huge xxx')]
    check(len(huge) == 1 and len(huge[0]) == 1000 and huge[0].endswith('…'),
          'a 100 KB name is cut to 1000 characters')
    check(len(page_text) < 400_000, f'the page stays small ({len(page_text)} bytes)')
    check('\\u003c/script' in page_text and '</script><script>document' not in page_text,
          'the data cannot end its <script> element')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--chromium', required=True)
    parser.add_argument('--screenshots', required=True, help='tools/ferret-report-screenshots')
    parser.add_argument('--work', required=True)
    parser.add_argument('--synthetic')
    parser.add_argument('--page')
    parser.add_argument('--summary-file')
    parser.add_argument('--gpu', action='store_true', help='with --page: the run used a GPU')
    parser.add_argument('--program', nargs=argparse.REMAINDER)
    options = parser.parse_args()
    chromium = shutil.which(options.chromium) if options.chromium else None
    if chromium is None:
        print(f'SKIPPED: no Chromium ({options.chromium}); install chromium (tools/install-deps test)')
        return 77
    work = options.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    if options.synthetic:
        result = subprocess.run([options.synthetic, work], capture_output=True, text=True, timeout=60)
        check(result.returncode == 0, f'synthetic run: {result.returncode} {result.stderr}')
        page = os.path.join(work, 'synthetic.html')
        with open(os.path.join(work, 'synthetic-summary.txt'), encoding='utf-8') as f:
            summary = f.read()
        views = ['system', 'objects/2', 'code', 'devices', 'run']
    elif options.page:
        page = os.path.abspath(options.page)
        with open(options.summary_file, encoding='utf-8') as f:
            summary = f.read()
        summary = summary[summary.find('ferret summary: '):]
        views = ['system', 'objects', 'code', 'devices', 'run']
    else:
        environment = {k: v for k, v in os.environ.items() if not k.startswith('FERRET_')}
        environment.update(FERRET_BACKEND='report,summary', FERRET_OUTPUT=os.path.join(work, 'program'))
        result = subprocess.run(options.program, capture_output=True, text=True, timeout=120,
                                env=environment, cwd=work)
        check(result.returncode == 0, f'{options.program}: exit status {result.returncode}')
        page = os.path.join(work, 'program.html')
        start = result.stderr.find('ferret summary: ')
        end = result.stderr.find('\nferret: ', start)
        summary = result.stderr[start:end + 1 if end >= 0 else None] if start >= 0 else ''
        check(f'ferret: report: {page}' in result.stderr, 'the runtime names the report at exit')
        views = ['code', 'objects']
    check(os.path.isfile(page), 'the report was written')
    check(summary.startswith('ferret summary: '), 'the summary was written')
    if failures:
        return 1
    with open(page, encoding='utf-8') as f:
        page_text = f.read()

    with tempfile.TemporaryDirectory() as profile:
        dom = dump_dom(chromium, page, 'code', profile)
        compare_with_summary(dom, summary, gpu=bool(options.synthetic) or options.gpu)
        if options.synthetic:
            check_hostile_names(dom, page_text)
            check_gpu_tree(dom)
            # The object view with the device grid selected: who moved it.
            selected = dump_dom(chromium, page, 'objects/2', profile)
            contexts = table_rows(by_id(selected, 'object-contexts'))
            check(sorted(row[0] for row in contexts) == sorted(
                ['main/setup/cudaMemcpyAsync', 'main/setup/cudaMemsetAsync',
                 'main/solve/step/cudaLaunchKernel', 'main/solve/step/cudaMemcpyPeerAsync']),
                f'the contexts that moved the device grid: {contexts}')
            flows = table_rows(by_id(selected, 'object-flows'))
            check(['in', 'HtoD', 'host', 'GPU 0', '4.0 MiB', '1'] in flows, f'flows of the device grid: {flows}')
            check_device_initiated_views(chromium, page, summary, profile)

    shots = os.path.join(work, 'screenshots')
    result = subprocess.run([options.screenshots, page, shots, '1400x1000', *views],
                            capture_output=True, text=True, timeout=180,
                            env={**os.environ, 'CHROMIUM': chromium})
    check(result.returncode == 0, f'screenshots: {result.stderr}')
    for view in views:
        path = os.path.join(shots, view.replace('/', '-') + '.png')
        size = png_size(path) if os.path.isfile(path) else None
        check(size == (1400, 1000), f'screenshot {path}: {size}')

    print(f'report check: {passed} passed, {len(failures)} failed; screenshots in {shots}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
