"""Checks the Outcomes recorded at f3322fe against this checkout (float32 or float64).

    python tests/data/check_outcomes.py f32     # or f64 (the suite runs f64)

Prints every case whose Outcome changed and exits 1 if any did.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))


def main(tag: str) -> int:
    import jax

    jax.config.update("jax_enable_x64", tag == "f64")
    from tests.test_bit_identity import check, records

    bad = 0
    recs = records(tag)
    for r in recs:
        changed = check(r)
        if changed:
            bad += 1
            print(f"CHANGED {r['case']} shuffle={r['shuffle']}: {changed}")
    print(f"{len(recs) - bad} of {len(recs)} {tag} Outcomes bit-identical to f3322fe")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "f32"))
