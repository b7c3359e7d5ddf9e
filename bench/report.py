"""The benchmark's Markdown table: one row per figure, one column per broker, and the ratio
minibroker / Kafka when both ran (above 1 means minibroker's figure is larger: better for a
rate, worse for a time, a size or a CPU cost)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

#: (key, label, number format)
FIGURES = [
    ("startup_ms", "process start to first Metadata answer (ms)", "{:,.0f}"),
    ("idle_rss_mb", "idle RSS (MB)", "{:,.1f}"),
    ("threads", "threads", "{:,.0f}"),
    ("rss_after_load_mb", "RSS after the load below (MB)", "{:,.1f}"),
    ("produce_100_per_s", "produce 100 B idempotent, acks=all (records/s)", "{:,.0f}"),
    ("produce_100_cpu_us_per_record", "broker CPU per 100 B record produced (us)", "{:,.2f}"),
    ("produce_1k_per_s", "produce 1 KB idempotent (records/s)", "{:,.0f}"),
    ("produce_1k_cpu_us_per_record", "broker CPU per 1 KB record produced (us)", "{:,.2f}"),
    ("txn_100_per_s", "produce 100 B transactional, commit every 1000 (records/s)", "{:,.0f}"),
    ("txn_100_cpu_ms_per_txn", "broker CPU per transaction of 1000 x 100 B (ms)", "{:,.2f}"),
    ("txn_1k_per_s", "produce 1 KB transactional, commit every 1000 (records/s)", "{:,.0f}"),
    ("one_txn_per_s", "one-record transactions, one producer (commits/s)", "{:,.0f}"),
    ("one_txn_cpu_ms_per_txn", "broker CPU per one-record transaction (ms)", "{:,.2f}"),
    ("java_txn_v2_per_s", "Java 4.4 transactions V2, commit every 1000 x 100 B (records/s)", "{:,.0f}"),
    ("java_txn_v2_cpu_ms_per_txn", "broker CPU per Java V2 transaction of 1000 x 100 B (ms)", "{:,.2f}"),
    ("java_txn_v1_per_s", "Java 4.4 transactions V1, commit every 1000 x 100 B (records/s)", "{:,.0f}"),
    ("java_txn_v1_cpu_ms_per_txn", "broker CPU per Java V1 transaction of 1000 x 100 B (ms)", "{:,.2f}"),
    ("java_one_txn_v2_per_s", "Java 4.4 one-record transactions, V2 (commits/s)", "{:,.0f}"),
    ("java_one_txn_v2_cpu_ms_per_txn", "broker CPU per Java V2 one-record transaction (ms)", "{:,.2f}"),
    ("java_one_txn_v1_per_s", "Java 4.4 one-record transactions, V1 (commits/s)", "{:,.0f}"),
    ("java_one_txn_v1_cpu_ms_per_txn", "broker CPU per Java V1 one-record transaction (ms)", "{:,.2f}"),
    ("latency_p50_ms", "produce latency p50 at 1,000 records/s (ms)", "{:,.2f}"),
    ("latency_p99_ms", "produce latency p99 at 1,000 records/s (ms)", "{:,.2f}"),
    ("consume_100_per_s", "consume 100 B read_uncommitted (records/s)", "{:,.0f}"),
    ("consume_100_cpu_us_per_record", "broker CPU per 100 B record consumed (us)", "{:,.2f}"),
    ("consume_txn_per_s", "consume 100 B transactional data read_committed (records/s)", "{:,.0f}"),
]


def markdown(results: dict) -> str:
    medians = results["median"]
    brokers = list(medians)
    both = "minibroker" in medians and "kafka" in medians
    head = ["figure", *brokers] + (["minibroker / Kafka"] if both else [])
    lines = [
        f"Benchmark {results['date']}, {results['machine']['cpus']} CPUs, "
        f"load average {results['machine']['loadavg_before'][0]:.1f} before / "
        f"{results['machine']['loadavg_after'][0]:.1f} after; median of "
        f"{results['runs']} fresh brokers per column; throughput figures with "
        f"{results.get('clients', 1)} client process(es) (one-record transactions and latency: one).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for key, label, fmt in FIGURES:
        if not any(key in medians[b] for b in brokers):
            continue
        row = [label] + [fmt.format(medians[b][key]) if key in medians[b] else "-" for b in brokers]
        if both:
            mb, kf = medians["minibroker"].get(key), medians["kafka"].get(key)
            row.append(f"{mb / kf:.2f}" if mb is not None and kf else "-")
        lines.append("| " + " | ".join(row) + " |")
    mb = medians.get("minibroker", {})
    if "txn_100_per_s" in mb and "produce_100_per_s" in mb:
        lines += [
            "",
            f"minibroker transactional / idempotent throughput (100 B): "
            f"{mb['txn_100_per_s'] / mb['produce_100_per_s']:.2f}",
        ]
    if results.get("control_plane"):
        from bench.control_off import markdown as control_markdown  # noqa: PLC0415

        lines += ["", *control_markdown(results["control_plane"])]
    for name, curve in results.get("curves", {}).items():
        lines += [
            "",
            f"Scale curve: {name} ({curve.get('broker', 'minibroker')})",
            "",
            "| " + " | ".join(curve["columns"]) + " |",
            "|" + "---|" * len(curve["columns"]),
        ]
        lines += [
            "| " + " | ".join(f"{v:,.1f}" if isinstance(v, float) else f"{v:,}" for v in row) + " |"
            for row in curve["rows"]
        ]
        if curve.get("plot"):
            lines += ["", f"![{name}]({curve['plot']})"]
    return "\n".join(lines) + "\n"


def broker_columns_table(
    intro: str,
    head: list[str],
    rows: Sequence[dict],
    brokers: Sequence[str],
    row_cells: Callable[[dict], list[str]],
    figure_cells: Callable[[dict], list[str]],
) -> str:
    """A bench's Markdown table with two figures per broker (bench/consumer_groups.py,
    bench/share_groups.py): `intro`, then a line per row, its own cells then each broker's two
    figures, "skipped (n)" where that broker skipped the point, the reasons as footnotes below."""
    lines = [intro, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    skipped: dict[str, int] = {}  # reason -> footnote number
    for row in rows:
        cells = row_cells(row)
        for b in brokers:
            point = row[b]
            if "skipped" in point:
                note = skipped.setdefault(point["skipped"], len(skipped) + 1)
                cells += [f"skipped ({note})", "-"]
            else:
                cells += figure_cells(point)
        lines.append("| " + " | ".join(cells) + " |")
    if skipped:
        lines.append("")
        lines += [f"({note}) {reason}" for reason, note in skipped.items()]
    return "\n".join(lines) + "\n"


def write_results(out_dir: str, name: str, results: dict, markdown: Callable[[dict], str]) -> None:
    """A group bench's `<name>.json` and `<name>.md` in `out_dir` (created if missing); the table
    printed too."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    table = markdown(results)
    (out / f"{name}.md").write_text(table)
    print(table)
