"""``-o html``: one self-contained page for ``simulate``, ``explain`` and what-if.

Everything is inline (CSS, a few lines of JS, the data as attributes): the file opens from
disk with no network. The page has, per run, a pods x nodes heat map of weighted totals
(a filtered node is a grey cross; hover shows the per-plugin breakdown or the filter reasons,
a click pins it in the detail panel), the filter reasons per node of each unscheduled pod,
node utilization bars (requested over allocatable), and for what-if the diff of placements
and the bars of both runs side by side. The same report objects as the JSON output feed it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape

from scheduler_core.simulator.explain import Explanation
from scheduler_core.simulator.report import SCHEDULED, TOTAL, PodReport
from scheduler_core.simulator.usage import Usage
from scheduler_core.simulator.whatif import WhatIf

MAX_NODES = 60  # heat map columns: the best-scoring nodes first; the rest are counted

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#1d2433;background:#fafbfc}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.summary{color:#444;margin-bottom:12px}
table{border-collapse:collapse;background:#fff}
th,td{border:1px solid #dde1e6;padding:3px 6px;text-align:left;white-space:nowrap}
th.node{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;font-size:12px}
td.cell{width:34px;text-align:center;cursor:pointer;font-size:12px}
td.filtered{background:#c9ccd1;color:#555}td.unscored{color:#aaa}
td.chosen{outline:3px solid #1d2433;outline-offset:-3px;font-weight:bold}
tr.moved td{background:#fff4d6}
.status-Scheduled{color:#17703a}.status-Unschedulable,.status-Error{color:#b42318}
#detail{position:sticky;top:8px;float:right;width:360px;min-height:60px;background:#fff;
border:1px solid #dde1e6;padding:8px;margin-left:16px;font-size:13px}
.bar{display:inline-block;height:10px;background:#e4e7eb;width:160px;vertical-align:middle;margin-right:4px}
.bar span{display:block;height:10px;background:#3b82f6}.bar.after span{background:#f59e0b}
.more{color:#666;font-size:12px}ul.reasons{margin:2px 0 8px 18px;padding:0}
"""

_JS = """
(function(){
  var detail=document.getElementById('detail');
  function show(cell){
    var data=JSON.parse(cell.getAttribute('data-detail'));
    var out=['<b>'+esc(data.pod)+' on '+esc(data.node)+'</b>'];
    if(data.reasons){out.push('<div>filtered:</div><ul class="reasons">');
      data.reasons.forEach(function(r){out.push('<li>'+esc(r)+'</li>');});out.push('</ul>');}
    else if(data.scores){out.push('<table class="breakdown">');
      Object.keys(data.scores).forEach(function(k){
        out.push('<tr><td>'+esc(k)+'</td><td>'+data.scores[k]+'</td></tr>');});
      out.push('</table>');}
    else{out.push('<div>not scored</div>');}
    detail.innerHTML=out.join('');
  }
  function esc(s){return String(s).replace(/[&<>"]/g,function(c){
    return {'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c];});}
  document.querySelectorAll('td.cell').forEach(function(cell){
    cell.addEventListener('click',function(){show(cell);});
    cell.addEventListener('mouseenter',function(){show(cell);});
  });
})();
"""


def page(title: str, summary: str, body: Sequence[str]) -> str:
    return "".join(
        [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
            f"<div id='detail'>Hover or click a cell for the per-plugin breakdown.</div><h1>{escape(title)}</h1>",
            f"<div class='summary'>{escape(summary)}</div>",
            *body,
            f"<script>{_JS}</script></body></html>",
        ]
    )


def heat_map(reports: Sequence[PodReport], node_order: Sequence[str], *, caption: str = "Scores") -> str:
    """Pods x nodes, weighted totals; the chosen node outlined, filtered nodes crossed."""
    best: dict[str, int] = {}
    for r in reports:
        for node, row in r.scores.items():
            best[node] = max(best.get(node, -1), row[TOTAL])
        for node in r.filtered:
            best.setdefault(node, -1)
    ranked = sorted(node_order, key=lambda n: -best.get(n, -2))
    nodes = sorted(ranked[:MAX_NODES], key=list(node_order).index)
    hidden = len(node_order) - len(nodes)
    head = "".join(f"<th class='node'>{escape(n)}</th>" for n in nodes)
    rows = []
    for r in reports:
        pod = f"{r.namespace}/{r.name}"
        totals = [row[TOTAL] for row in r.scores.values()]
        span = (min(totals, default=0), max(totals, default=0))
        cells = [
            f"<td class='pod'>{escape(pod)}</td>",
            f"<td class='status-{escape(r.status)}'>{escape(r.status)}</td>",
        ]
        for node in nodes:
            cells.append(_cell(pod, node, r, span))
        rows.append(f"<tr data-pod='{escape(pod)}'>{''.join(cells)}</tr>")
    more = f"<div class='more'>... and {hidden} more nodes not shown</div>" if hidden > 0 else ""
    return (
        f"<h2>{escape(caption)}</h2><table class='heatmap'><tr><th>pod</th><th>status</th>{head}</tr>"
        f"{''.join(rows)}</table>{more}"
    )


def _cell(pod: str, node: str, report: PodReport, span: tuple[int, int]) -> str:
    chosen = " chosen" if report.node == node and report.status == SCHEDULED else ""
    detail: dict[str, object]
    if node in report.filtered:
        detail = {"pod": pod, "node": node, "reasons": report.filtered[node]}
        title = "; ".join(report.filtered[node])
        return f"<td class='cell filtered' title='{escape(title)}' data-detail='{escape(json.dumps(detail))}'>✕</td>"
    row = report.scores.get(node)
    if row is None:
        detail = {"pod": pod, "node": node}
        text = "●" if chosen else "·"
        return f"<td class='cell unscored{chosen}' data-detail='{escape(json.dumps(detail))}'>{text}</td>"
    total = row[TOTAL]
    low, high = span
    share = (total - low) / (high - low) if high > low else 1.0  # the row's own range: differences show
    colour = f"hsl(140,60%,{int(92 - 50 * share)}%)"
    title = ", ".join(f"{k}={v}" for k, v in row.items())
    detail = {"pod": pod, "node": node, "scores": row}
    return (
        f"<td class='cell scored{chosen}' style='background:{colour}' title='{escape(title)}' "
        f"data-detail='{escape(json.dumps(detail))}'>{total}</td>"
    )


def filter_reasons(reports: Sequence[PodReport]) -> str:
    """The message and per-node reasons of every pod that did not schedule."""
    parts = []
    for r in reports:
        if r.status == SCHEDULED:
            continue
        items = "".join(
            f"<li><b>{escape(node)}</b>: {escape('; '.join(reasons))}</li>" for node, reasons in r.filtered.items()
        )
        parts.append(
            f"<div class='unscheduled' data-pod='{escape(r.namespace)}/{escape(r.name)}'>"
            f"<b>{escape(r.namespace)}/{escape(r.name)}</b>: {escape(r.message)}<ul class='reasons'>{items}</ul></div>"
        )
    return "<h2>Filter reasons</h2>" + "".join(parts) if parts else ""


def utilization(before: Mapping[str, Usage], after: Mapping[str, Usage] | None) -> str:
    """Requested over allocatable per node: one bar per resource, two when comparing."""
    head = "<tr><th>node</th><th>cpu</th><th>memory</th><th>pods</th></tr>"
    rows = []
    for node, use in before.items():
        other = after.get(node) if after is not None else None
        cpu = _bars(use.cpu, other.cpu if other else None)
        memory = _bars(use.memory, other.memory if other else None)
        pods = f"{use.pods}" + (f" → {other.pods}" if other else "")
        rows.append(f"<tr class='usage' data-node='{escape(node)}'><td>{escape(node)}</td>"
                    f"<td>{cpu}</td><td>{memory}</td><td>{pods}</td></tr>")  # fmt: skip
    legend = " (blue: live, orange: candidate)" if after is not None else ""
    return f"<h2>Node utilization{legend}</h2><table class='utilization'>{head}{''.join(rows)}</table>"


def _bars(value: float, other: float | None) -> str:
    out = _bar(value, "before")
    if other is not None:
        out += "<br>" + _bar(other, "after")
    return out


def _bar(value: float, kind: str) -> str:
    width = max(0.0, min(1.0, value)) * 100
    return f"<span class='bar {kind}'><span style='width:{width:.1f}%'></span></span>{value:.0%}"


def diff(rows: Sequence[tuple[str, str | None, str | None]]) -> str:
    """(pod, live node, candidate node) per pod; moved rows highlighted."""
    body = "".join(
        f"<tr class='{'moved' if live != cand else 'same'}'><td>{escape(pod)}</td>"
        f"<td>{escape(live or '-')}</td><td>{escape(cand or '-')}</td>"
        f"<td>{'moved' if live != cand else ''}</td></tr>"
        for pod, live, cand in rows
    )
    return (
        "<h2>Placements: live vs candidate</h2><table class='diff'>"
        f"<tr><th>pod</th><th>live</th><th>candidate</th><th></th></tr>{body}</table>"
    )


# -- the three reports -------------------------------------------------------------------------


def render_simulation(reports: Sequence[PodReport], usage: Mapping[str, Usage]) -> str:
    scheduled = sum(1 for r in reports if r.status == SCHEDULED)
    summary = f"{scheduled} of {len(reports)} pods scheduled on {len(usage)} nodes"
    body = [heat_map(reports, list(usage)), filter_reasons(reports), utilization(usage, None)]
    return page("crd-scheduler simulate", summary, body)


def render_explanation(explanation: Explanation) -> str:
    r = explanation.report
    summary = f"{r.status}" + (f" on {r.node}" if r.node else f": {r.message}")
    if explanation.bound_to:
        summary += f" (bound now to {explanation.bound_to})"
    body = [heat_map([r], list(explanation.nodes)), filter_reasons([r])]
    if explanation.held:
        reasons = "".join(f"<li>{escape(reason)}</li>" for reason in explanation.held)
        body.append(f"<h2>Why profile {escape(r.profile)} does not serve</h2><ul class='reasons'>{reasons}</ul>")
    if explanation.preemption is not None:
        p = explanation.preemption
        victims = "".join(f"<li>{escape(v)}</li>" for v in p.victims)
        body.append(f"<h2>Preemption</h2><div class='preemption'>nominated node <b>{escape(p.node or '-')}</b>; "
                    f"victims:<ul class='reasons'>{victims}</ul></div>")  # fmt: skip
    body.append(utilization(explanation.nodes, None))
    return page(f"crd-scheduler explain {r.namespace}/{r.name}", summary, body)


def render_whatif(whatif: WhatIf) -> str:
    rows = [(f"{p.namespace}/{p.name}", p.live_node, p.candidate_node) for p in whatif.placements]
    nodes = list(whatif.before)
    live = [p.live for p in whatif.placements if p.live is not None]
    candidate = [p.candidate for p in whatif.placements if p.candidate is not None]
    body = [
        diff(rows),
        utilization(whatif.before, whatif.after),
        heat_map(live, nodes, caption="Scores under the live profiles"),
        heat_map(candidate, nodes, caption="Scores under the candidate profiles"),
        filter_reasons(candidate),
    ]
    return page("crd-scheduler what-if", whatif.summary(), body)
