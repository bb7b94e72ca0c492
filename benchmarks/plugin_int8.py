"""The plugin's int8 vector copy against its float32 copy, without a database: memory, search
time and recall@k on synthetic 384-d sets (neo4j-plugin's test class ``Int8Bench``), then the
int8 copy alone at a size whose float copy would not fit (``--int8-rows``), written as a
results file (``benchmarks/results/<date>-plugin-int8.json``).

    python -m benchmarks.plugin_int8 [--rows 200000] [--dim 384] [--queries 45] [--int8-rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from kgdb import results

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "neo4j-plugin"


WORDS = ["film", "actor", "director", "river", "city", "music", "war", "love", "house", "king",
         "queen", "star", "night", "day", "water", "fire", "stone", "road", "garden", "ship",
         "book", "song", "game", "team", "party", "island", "mountain", "bridge", "church",
         "school"]


def minilm_quantization_error(names: int = 3000, sample: int = 2000) -> dict[str, object]:
    """|x - x̂| of MiniLM vectors of synthetic names (1-3 words and a numbered word), coded
    with per-dimension ranges from ``sample`` of them (as Int8Rows: min/max widened, 256
    levels) and with a symmetric scale per vector (max |x_i| / 127), on the others."""
    import random

    from kgdb.embed.minilm import MiniLMEmbedder

    rng = random.Random(1)
    texts = [" ".join(rng.sample(WORDS, rng.randint(1, 3))) + f" {rng.choice(WORDS)}{i}"
             for i in range(names)]
    v = np.asarray(MiniLMEmbedder().embed(texts), dtype=np.float64)
    train, test = v[:sample], v[sample:]

    def stats(err: np.ndarray) -> dict[str, float]:
        return {"mean": round(float(err.mean()), 6), "p99": round(float(np.percentile(err, 99)), 6),
                "max": round(float(err.max()), 6)}

    out: dict[str, object] = {"names": names, "sample": sample,
                              "per_dimension_std_max_over_median": round(float(
                                  train.std(0).max() / np.median(train.std(0))), 2)}
    for widen in (0.02, 0.10):
        lo, hi = train.min(0), train.max(0)
        pad = widen * (hi - lo)
        step = (hi - lo + 2 * pad) / 255
        mid = lo - pad + 128 * step
        raw = np.rint((test - mid) / step)
        xhat = mid + step * np.clip(raw, -128, 127)
        out[f"per_dimension_widen_{widen:.2f}"] = {
            **stats(np.linalg.norm(test - xhat, axis=1)),
            "clipped_share": float(((raw < -128) | (raw > 127)).mean())}
    scale = np.abs(test).max(1, keepdims=True) / 127
    out["per_vector"] = stats(np.linalg.norm(test - np.rint(test / scale) * scale, axis=1))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=45)
    parser.add_argument("--int8-rows", type=int, default=1_000_000,
                        help="rows of the int8-only run (0: none)")
    parser.add_argument("--heap", default="5g", help="the benchmark JVM's -Xmx")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    load = results.load_average()
    with tempfile.TemporaryDirectory() as tmp:
        cp_file = Path(tmp) / "cp.txt"
        subprocess.run(["mvn", "-B", "-q", "-f", str(PLUGIN / "pom.xml"), "test-compile",
                        "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}"],
                       check=True, timeout=1800)
        classpath = ":".join([str(PLUGIN / "target" / "classes"),
                              str(PLUGIN / "target" / "test-classes"), cp_file.read_text().strip()])
        bench = ["java", f"-Xmx{args.heap}", "-cp", classpath, "dev.kgdb.neo4j.Int8Bench"]
        out = subprocess.run([*bench, str(args.rows), str(args.dim), str(args.queries)],
                             check=True, capture_output=True, text=True, timeout=7200).stdout
        if args.int8_rows:
            out += subprocess.run([*bench, str(args.int8_rows), str(args.dim),
                                   str(args.queries // 2), "int8-only"],
                                  check=True, capture_output=True, text=True, timeout=7200).stdout
    runs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    error = minilm_quantization_error()
    report = {"what": "int8 vs float32 in-memory vector copy of kgdb's Neo4j plugin "
                      "(VectorMatrix / Int8Rows), recall@k against a brute-force scan in double",
              "short_list": "4k rows re-ranked from the stored vectors (at least 64), at most "
                            "as many again to prove the top k exact",
              "minilm_quantization_error": error, "runs": runs}
    document = results.result_document("plugin-int8", report, engine=None,
                                       command=["python", "-m", "benchmarks.plugin_int8",
                                                *(argv if argv is not None else sys.argv[1:])],
                                       load_at_start=load)
    path = results.write_result(args.results, document)
    print(json.dumps(report, indent=2))
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
