from datetime import date
from pathlib import Path

from kb.records import Claim, Evidence, Verdict
from kb.store import cache as cache_module
from kb.store.cache import ResultCache, dumps, key_of, loads


def test_records_round_trip_through_json():
    claim = Claim(
        claim_id="c1",
        doc_id="a.md",
        version_id="v",
        start=1,
        end=9,
        source_text="x",
        text="x",
        requirements=("source_passage", "fresh_source:90d"),
        freshness_days=90,
    )
    evidence = Evidence(
        claim_id="c1",
        rank=1,
        passage_id="p",
        source_id="s",
        source_version="sv",
        source_date=date(2025, 6, 1),
        authority=0.8,
        passage="P",
        sentence="S",
        score_bm25=1.5,
        score_dense=0.5,
        score_fused=0.03,
    )
    verdict = Verdict(claim_id="c1", label="stale", confidence=0.9, tier="rules", rationale="r", evidence_ids=("e1",))
    value = [claim, [evidence], verdict, None]
    assert loads(dumps(value)) == value


def test_values_persist_across_instances_and_torn_shards_are_dropped(tmp_path: Path):
    first = ResultCache(tmp_path, "ns")
    first.put_many({"a": [1, 2], "b": {"x": date(2024, 1, 2)}})
    (tmp_path / "ns" / "zz-torn.parquet").write_bytes(b"PAR1 not really")
    second = ResultCache(tmp_path, "ns")
    assert second.get_many(["a", "b", "c"]) == {"a": [1, 2], "b": {"x": date(2024, 1, 2)}}
    assert not (tmp_path / "ns" / "zz-torn.parquet").exists()


def test_many_shards_are_compacted(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(cache_module, "MAX_SHARDS", 3)
    store = ResultCache(tmp_path, "ns")
    for i in range(5):
        store.put_many({f"k{i}": i})
    assert len(list((tmp_path / "ns").glob("*.parquet"))) <= 3
    assert ResultCache(tmp_path, "ns").get_many([f"k{i}" for i in range(5)]) == {f"k{i}": i for i in range(5)}


def test_keys_depend_on_every_part():
    assert key_of("a", 1, [2]) == key_of("a", 1, [2])
    assert key_of("a", 1, [2]) != key_of("a", 1, [3])
    # what stage keys hold: dates, paths, None, non-ASCII text, dicts in any key order, int keys
    parts = (date(2026, 1, 1), Path("/m"), None, "ünïcode ✓", {"b": 1, "a": [1.5, True]}, {1: "x"})
    assert key_of(*parts) == key_of(date(2026, 1, 1), Path("/m"), None, "ünïcode ✓", {"a": [1.5, True], "b": 1}, {1: "x"})
    assert key_of(*parts) != key_of(date(2026, 1, 2), *parts[1:]) and key_of("ü") != key_of("u")
    assert key_of((1, 2)) == key_of([1, 2]) and len(key_of()) == 32


def test_a_cached_value_with_nan_reads_back():
    """json.dumps writes NaN, which the faster parser rejects: such a value still reads back."""
    back = loads(dumps({"score": float("nan"), "x": [1]}))
    assert back["x"] == [1] and back["score"] != back["score"]


def test_the_corpus_fingerprint_keeps_its_form():
    """Every runs row stores it and PR mode compares it with earlier runs': a new form would make
    the first PR run after an upgrade audit everything. The value is the one stores hold."""
    from types import SimpleNamespace

    from kb.chain import corpus_fingerprint

    sources = [
        SimpleNamespace(source_id="a", source_version="v1", source_date=date(2024, 1, 1), authority=0.5, deleted_in=None),
        SimpleNamespace(source_id="b", source_version="v2", source_date=None, authority=1.0, deleted_in="r2"),
    ]
    assert corpus_fingerprint(sources) == "2abb0f8dfc2df5c6f28f3af9ef39e7ed"  # pyright: ignore[reportArgumentType]


def test_merging_keeps_what_another_process_wrote(tmp_path, monkeypatch):
    """Two writers on one folder (two shards of a run): the one that merges must not delete the
    other's shards, which it never read."""
    monkeypatch.setattr(cache_module, "MAX_SHARDS", 3)
    first = ResultCache(tmp_path, "ns")
    second = ResultCache(tmp_path, "ns")
    first.put_many({"a0": 0})  # first has loaded the folder now; second has not
    second.put_many({"b0": 0})
    for i in range(1, 6):
        second.put_many({f"b{i}": i})  # written after first loaded: first has not read these
        first.put_many({f"a{i}": i})  # merges past MAX_SHARDS
    fresh = ResultCache(tmp_path, "ns")
    assert fresh.get_many([f"a{i}" for i in range(6)] + [f"b{i}" for i in range(6)]) == {
        **{f"a{i}": i for i in range(6)},
        **{f"b{i}": i for i in range(6)},
    }
    assert len(list((tmp_path / "ns").glob("*.parquet"))) <= 8
