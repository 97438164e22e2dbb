"""The learning curve of a run: RUN_DIR/learning_curve.png with matplotlib, else a table.

    python train/plot.py runs/quick            # PNG if matplotlib is installed
    python train/plot.py runs/quick --text     # the table only
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

from trictrac_jax.az.run import load_records


def opponents(records) -> list[str]:
    return sorted({k[3:] for r in records for k in r
                   if k.startswith("vs_") and not k.endswith(("_lo", "_hi", "_games"))})


def table(records) -> str:
    opps = opponents(records)
    header = ["iter", "minutes", "games", "loss", "value_loss"] + [f"vs {o} [95% CI]"
                                                                    for o in opps]
    rows, games = [], 0
    for r in records:
        games += r.get("games", 0)
        if not any(f"vs_{o}" in r for o in opps) and r is not records[-1]:
            continue
        row = [str(r["iteration"]), f"{r['elapsed_s'] / 60:.1f}", str(games),
               f"{r['loss']:.3f}" if "loss" in r else "-",
               f"{r['value_loss']:.3f}" if "value_loss" in r else "-"]
        row += [f"{r[f'vs_{o}']:.3f} [{r[f'vs_{o}_lo']:.3f}, {r[f'vs_{o}_hi']:.3f}]"
                if f"vs_{o}" in r else "-" for o in opps]
        rows.append(row)
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    fmt = lambda row: "| " + " | ".join(x.ljust(w) for x, w in zip(row, widths)) + " |"
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def plot(records, out: pathlib.Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_win, ax_loss) = plt.subplots(1, 2, figsize=(11, 4))
    for o in opponents(records):
        rs = [r for r in records if f"vs_{o}" in r]
        x = [r["elapsed_s"] / 60 for r in rs]
        ax_win.plot(x, [r[f"vs_{o}"] for r in rs], marker="o", label=f"vs {o}")
        ax_win.fill_between(x, [r[f"vs_{o}_lo"] for r in rs], [r[f"vs_{o}_hi"] for r in rs],
                            alpha=0.2)
    ax_win.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax_win.set(xlabel="minutes", ylabel="win rate (95% Wilson CI)", ylim=(0, 1))
    ax_win.legend()
    for name in ("policy_loss", "value_loss"):
        rs = [r for r in records if name in r]
        ax_loss.plot([r["iteration"] for r in rs], [r[name] for r in rs], label=name)
    ax_loss.set(xlabel="iteration", ylabel="loss")
    ax_loss.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_dir", type=pathlib.Path)
    p.add_argument("--text", action="store_true", help="print the table, no PNG")
    args = p.parse_args(argv)
    try:
        records = load_records(args.run_dir)
    except (FileNotFoundError, json.JSONDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(table(records))
    if not args.text:
        try:
            plot(records, args.run_dir / "learning_curve.png")
            print(f"wrote {args.run_dir / 'learning_curve.png'}")
        except ImportError:
            print("(matplotlib is not installed: table only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
