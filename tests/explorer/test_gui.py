"""The explorer GUI under ``streamlit.testing.v1.AppTest``, against a real index
of the sample corpus (``sample_index``) and the loopback embedding stub.

Every page is opened through ``explorer/app.py`` (``st.navigation``) with the
settings in the environment, as ``chunknav gui`` runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.config import Settings
from engine.errors import WHO_FIXES
from engine.tools.registry import Engine, call_tool
from tests.fixtures.waits import wait_until
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION, SAMPLES
from tests.fixtures.stub import Reply, ollama_error

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "explorer" / "app.py")
PAGE = {name: f"../pages/{name}.py" for name in ("status", "rebuild", "explore", "chunk", "source")}
QUERY = "Lorem ipsum dolor sit amet"


def _env(monkeypatch, settings: Settings, **extra: str) -> None:
    monkeypatch.setenv("CHUNKNAV_DB", settings.db)
    monkeypatch.setenv("EMBED_PROVIDER", settings.embed_provider)
    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def app(monkeypatch, sample_index):
    """An AppTest factory on the sample index with the local model."""
    _env(monkeypatch, sample_index)

    def make(page: str | None = None, **params) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=90)
        at.run()
        assert not at.exception, at.exception
        if page:
            for k, v in params.items():
                at.query_params[k] = str(v)
            at.switch_page(PAGE[page]).run()
            assert not at.exception, at.exception
        return at

    yield make
    st.cache_resource.clear()


def _codes(at: AppTest, language: str) -> list[str]:
    return [c.value for c in at.code if c.language == language]


def _panel(at: AppTest, tool: str) -> tuple[dict, dict]:
    """(call, envelope) shown by the "This maps to a tool call" panel of ``tool``."""
    blocks = _codes(at, "json")
    for i, text in enumerate(blocks):
        call = json.loads(text)
        if isinstance(call, dict) and call.get("name") == tool and "arguments" in call:
            return call, json.loads(blocks[i + 1])
    raise AssertionError(f"no tool-call panel for {tool}: {blocks!r}")


def _search(at: AppTest, query: str) -> AppTest:
    at.text_input(key="q").input(query)
    next(b for b in at.button if b.label == "Search").click().run()
    assert not at.exception, at.exception
    return at


def _texts(elements) -> str:
    return "\n".join(e.value for e in elements)


# -- every page ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "page,title",
    [
        ("status", "Status"),
        ("rebuild", "Rebuild"),
        ("explore", "Explore index"),
        ("chunk", "Chunk"),
        ("source", "Source"),
    ],
)
def test_every_page_opens(app, page, title):
    at = app(page)
    assert at.title[0].value == title
    assert not at.error


def test_status_shows_counts_provider_probe_and_collections(app, sample_engine):
    at = app("status")
    direct = call_tool(sample_engine, "index_status", {"probe": False})
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["documents"] == str(direct["documents"]) and metrics["chunks"] == str(direct["chunks"])
    assert metrics["chunks lacking vectors"] == "0" and metrics["stale vectors"] == "0"
    assert not at.success and any("Probe not run" in c.value for c in at.caption)  # no probe per render
    at.button(key="status_probe").click().run()
    assert any("Probe ok" in s.value for s in at.success)
    assert "l2_supercat_256" in _texts(at.markdown)
    call, env = _panel(at, "index_status")
    assert call == {"name": "index_status", "arguments": {"probe": True}}
    assert env["collections"][0]["collectionPath"] == SAMPLE_COLLECTION
    assert _codes(at, "bash") == [f"chunknav --db {sample_engine.settings.db} status --json"]


# -- explore ------------------------------------------------------------------------------
def test_explore_shows_whole_hits_past_the_agents_budget(app, sample_engine):
    """A long list is read whole (snippets, regions, every hit asked for): the explorer's
    search is not cut to the agents' default maxTokens."""
    at = app("explore", q="the", scope=SAMPLE_COLLECTION, limit=60, mode="keyword")
    call, shown = _panel(at, "search_chunks")
    assert call["arguments"]["maxTokens"] >= 100_000
    assert not shown.get("truncated") and shown["count"] == 60
    budgeted = call_tool(
        sample_engine, "search_chunks", {k: v for k, v in call["arguments"].items() if k != "maxTokens"}
    )
    assert budgeted.get("truncated"), "the sample answer fits the default budget: the test cannot tell"


def test_search_returns_hits_and_panel_is_the_engine_call(app, sample_engine):
    at = _search(app("explore"), QUERY)
    assert at.query_params["q"] == QUERY and at.query_params["scope"] == SAMPLE_COLLECTION
    opens = [b for b in at.button if b.label == "Open chunk"]
    assert opens, "no hits"
    call, shown = _panel(at, "search_chunks")
    assert call["arguments"]["query"] == QUERY and call["arguments"]["scope"] == SAMPLE_COLLECTION
    direct = call_tool(sample_engine, call["name"], call["arguments"])
    assert shown == json.loads(json.dumps(direct)), "panel envelope != engine call with the same arguments"
    assert shown["searched"] is True and shown["count"] == len(opens) > 0
    assert _codes(at, "bash")[0].startswith(f"chunknav --db {sample_engine.settings.db} search-chunks ")
    # query words marked in the snippets, page badge shown
    assert "<mark>" in _texts(at.markdown) and ":orange-badge[p. " in _texts(at.markdown)


def test_documents_granularity_calls_search(app, sample_engine):
    at = app("explore", q=QUERY, scope=SAMPLE_COLLECTION, kind="documents", mode="keyword")
    call, shown = _panel(at, "search")
    assert call["arguments"]["mode"] == "keyword"
    assert shown == call_tool(sample_engine, "search", call["arguments"])
    files = [h["filePath"] for h in shown["hits"]]
    assert len(files) == len(set(files)) > 0


def test_namespace_token_scopes_without_picker(app):
    at = app("explore", q=f"namespace:{SAMPLE_COLLECTION} {QUERY}")
    _call, shown = _panel(at, "search_chunks")
    assert shown["collections"] == [SAMPLE_COLLECTION] and shown["count"] > 0


def test_clicking_a_hit_opens_its_chunk(app):
    at = _search(app("explore"), QUERY)
    _call, shown = _panel(at, "search_chunks")
    first = shown["hits"][0]
    next(b for b in at.button if b.label == "Open chunk").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Chunk"
    qp = at.query_params
    assert (qp["c"], qp["f"], qp["i"]) == (first["collectionPath"], first["filePath"], str(first["chunkIndex"]))
    assert qp["q"] == QUERY and qp["hit"] == "0"
    call, env = _panel(at, "get_chunk")
    assert env["found"] and call["arguments"]["chunkIndex"] == first["chunkIndex"]


def test_zero_hits_looks_different_from_could_not_search(app):
    at = app("explore", q="qqxzzyv wqpmxx", scope=SAMPLE_COLLECTION, mode="keyword")
    assert any("Searched, 0 hits" in i.value for i in at.info)
    assert not at.error and not at.warning
    _call, shown = _panel(at, "search_chunks")
    assert shown["searched"] is True and shown["count"] == 0


def test_a_link_without_scope_searches_the_scope_the_form_shows(app, sample_engine):
    """/explore?q=... without scope on a one-collection index pre-selects that
    collection, and the search uses it; a cleared picker stays cleared and unsearched."""
    at = app("explore", q=QUERY)
    assert at.multiselect(key="scopes").value == [SAMPLE_COLLECTION]
    call, shown = _panel(at, "search_chunks")
    assert call["arguments"]["scope"] == SAMPLE_COLLECTION and shown["searched"] is True and shown["count"] > 0
    assert not any("Not searched" in i.value for i in at.info)
    at.multiselect(key="scopes").set_value([])
    next(b for b in at.button if b.label == "Search").click().run()
    at.run()  # a rerun shows what was submitted and searches that
    assert at.multiselect(key="scopes").value == []
    call, shown = _panel(at, "search_chunks")
    assert "scope" not in call["arguments"] and shown["searched"] is False
    assert any("Not searched" in i.value for i in at.info)


def test_no_scope_is_not_searched_with_hint(app):
    at = app("explore", q=QUERY)
    at.multiselect(key="scopes").set_value([])
    next(b for b in at.button if b.label == "Search").click().run()
    assert any("Not searched" in i.value and "namespace:" in i.value for i in at.info)
    assert not at.error


@pytest.fixture
def odd_names(tmp_path, monkeypatch):
    """Collections whose paths hold a comma and spaces, indexed, no provider."""
    root = tmp_path / "commadir"
    root.mkdir()
    (root / "a.txt").write_text("comma collection okra", "utf-8")
    settings = Settings(db=str(tmp_path / "odd.db"), allowed_roots=ALLOWED_ROOTS, embed_provider="none").validate()
    eng = Engine(settings)
    for name in ("Acme,Inc", "Acme Inc/Sub Dir", "Other"):
        eng.add_collection(name, str(root))
    eng.run_index()
    eng.close()
    _env(monkeypatch, settings)
    yield settings
    st.cache_resource.clear()


def _explore(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90).run()
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(PAGE["explore"]).run()
    assert not at.exception, at.exception
    return at


def test_a_collection_path_with_a_comma_is_searched_from_the_explorer(odd_names):
    """Scopes travel as one repeated `scope` parameter per path, never split."""
    at = _explore()
    at.text_input(key="q").input("okra")
    at.multiselect(key="scopes").set_value(["Acme,Inc"])
    at.segmented_control(key="mode").set_value("keyword")
    next(b for b in at.button if b.label == "Search").click().run()
    assert at.query_params["scope"] == "Acme,Inc"
    call, shown = _panel(at, "search_chunks")
    assert call["arguments"]["scope"] == "Acme,Inc" and shown["collections"] == ["Acme,Inc"] and shown["count"] == 1
    at.multiselect(key="scopes").set_value(["Acme,Inc", "Acme Inc/Sub Dir"])
    next(b for b in at.button if b.label == "Search").click().run()
    assert at.query_params["scope"] == ["Acme,Inc", "Acme Inc/Sub Dir"]
    call, shown = _panel(at, "search_chunks")
    assert call["arguments"]["scope"] == ["Acme,Inc", "Acme Inc/Sub Dir"] and shown["count"] == 2
    assert not at.warning  # the link is clean: no "there is no collection `Acme`"
    # the same link opened again (a new session), then a hit's chunk keeps both scopes
    at = _explore(q="okra", mode="keyword", scope=["Acme,Inc", "Acme Inc/Sub Dir"])
    assert at.multiselect(key="scopes").value == ["Acme,Inc", "Acme Inc/Sub Dir"] and not at.warning
    assert _panel(at, "search_chunks")[1]["count"] == 2
    next(b for b in at.button if b.label == "Open chunk").click().run()
    assert at.title[0].value == "Chunk" and at.query_params["scope"] == ["Acme,Inc", "Acme Inc/Sub Dir"]
    # a link joining paths by ',' opens too; a quoted namespace token names spaces
    at = _explore(q="okra", mode="keyword", scope="Other,Acme Inc/Sub Dir")
    assert at.multiselect(key="scopes").value == ["Other", "Acme Inc/Sub Dir"] and not at.warning
    at = _explore(q='namespace:"Acme Inc/Sub Dir" okra', mode="keyword", scope="Nope")
    assert any("no collection `Nope`" in w.value for w in at.warning)
    shown = _panel(at, "search_chunks")[1]
    assert shown["collections"] == ["Acme Inc/Sub Dir"] and shown["count"] == 1


# -- retrieval testing ----------------------------------------------------------------------
def _all_panels(at: AppTest, tool: str) -> list[tuple[dict, dict]]:
    blocks = _codes(at, "json")
    out = []
    for i, text in enumerate(blocks):
        call = json.loads(text)
        if isinstance(call, dict) and call.get("name") == tool and "arguments" in call:
            out.append((call, json.loads(blocks[i + 1])))
    return out


def test_all_collections_is_scope_star(app, sample_engine):
    at = app("explore", q=QUERY)
    at.checkbox(key="all").check()
    next(b for b in at.button if b.label == "Search").click().run()
    assert at.query_params["scope"] == "*"
    call, shown = _panel(at, "search_chunks")
    assert call["arguments"]["scope"] == "*" and shown["collections"] == [SAMPLE_COLLECTION]
    assert shown == call_tool(sample_engine, "search_chunks", call["arguments"])


def test_weight_and_threshold_sliders_are_tool_arguments_and_hits_show_the_breakdown(app, sample_engine):
    at = app("explore", q=QUERY, scope=SAMPLE_COLLECTION, mode="hybrid")
    at.slider(key="w").set_value(0.8)
    at.slider(key="min_hybrid").set_value(0.01)
    next(b for b in at.button if b.label == "Search").click().run()
    assert not at.exception, at.exception
    call, shown = _panel(at, "search_chunks")
    assert call["arguments"]["vectorWeight"] == 0.8 and call["arguments"]["minScore"] == 0.01
    assert shown == call_tool(sample_engine, "search_chunks", call["arguments"])
    assert shown["mode"] == "hybrid" and shown["vectorWeight"] == 0.8 and shown["count"] > 0
    captions = _texts(at.caption)
    assert "fused (rrf)" in captions and ("vector " in captions and "keyword " in captions)
    assert all(h["score"] >= 0.01 for h in shown["hits"])


def test_the_threshold_slider_fits_the_score_of_the_mode(app, sample_engine):
    """Keyword BM25 thresholds above 1 can be set (slider and link), hybrid's slider
    spans the fused RRF range, vector's the cosine; a mode change resets the threshold."""
    from explorer.retrieval import HYBRID_TOP

    at = app("explore", q="population capital", scope=SAMPLE_COLLECTION, mode="keyword", min="5")
    assert not at.warning  # no "clamped to 1"
    slider = at.slider(key="min_keyword")
    assert slider.value == 5.0 and slider.max >= 20 and slider.step == 0.1
    call, shown = _panel(at, "search_chunks")
    assert call["arguments"]["minScore"] == 5.0 and shown["searched"] and shown["count"] > 0
    assert all(h["score"] >= 5.0 for h in shown["hits"])
    assert shown == call_tool(sample_engine, "search_chunks", call["arguments"])
    at.slider(key="min_keyword").set_value(9.5)
    next(b for b in at.button if b.label == "Search").click().run()
    assert at.query_params["min"] == "9.5" and _panel(at, "search_chunks")[0]["arguments"]["minScore"] == 9.5
    # to hybrid: the BM25 threshold means nothing for fused scores: reset, slider in RRF units
    at.segmented_control(key="mode").set_value("hybrid")
    next(b for b in at.button if b.label == "Search").click().run()
    assert not at.exception, at.exception
    assert "min" not in at.query_params and any("threshold was reset" in c.value for c in at.caption)
    slider = at.slider(key="min_hybrid")
    assert slider.max == round(HYBRID_TOP, 4) and abs(HYBRID_TOP - 2 / 61) < 1e-12 and slider.step == 0.0005
    assert "minScore" not in _panel(at, "search_chunks")[0]["arguments"]
    # auto on an index with vectors runs hybrid: the same scale; vector: cosine 0..1
    assert app("explore", q=QUERY, scope=SAMPLE_COLLECTION).slider(key="min_hybrid").max == round(HYBRID_TOP, 4)
    assert app("explore", q=QUERY, scope=SAMPLE_COLLECTION, mode="vector").slider(key="min_vector").max == 1.0
    # a link above what the mode can score says so
    at = app("explore", q=QUERY, scope=SAMPLE_COLLECTION, mode="hybrid", min="5")
    assert any("above the highest hybrid score" in w.value for w in at.warning)
    assert _panel(at, "search_chunks")[1]["count"] == 0


def test_compare_modes_runs_each_mode_and_marks_what_each_found(app, sample_engine):
    at = app("explore", q=QUERY, scope=SAMPLE_COLLECTION, cmp="1")
    assert not at.exception, at.exception
    panels = _all_panels(at, "search_chunks")
    modes = [c["arguments"].get("mode") for c, _ in panels]
    assert modes[:1] == ["auto"] and sorted(modes[1:]) == ["hybrid", "keyword", "vector"]
    for call, shown in panels:
        assert shown == call_tool(sample_engine, "search_chunks", call["arguments"])
    table = next(m.value for m in at.markdown if "found by" in m.value and m.value.startswith("| "))
    lines = table.splitlines()[2:]
    assert lines and all(
        line.rstrip(" |").split("|")[-1].strip().replace(" ", "")
        and set(line.rstrip(" |").split("|")[-1].strip().replace(" ", "")) <= set("VKH")
        for line in lines
    )


def test_compare_modes_applies_the_threshold_only_to_the_mode_it_is_in(app, sample_engine):
    """A keyword (BM25) threshold is not applied to the vector and hybrid columns."""
    at = app("explore", q="population capital countries", scope=SAMPLE_COLLECTION, mode="keyword", min="5", cmp="1")
    assert not at.exception, at.exception
    panels = _all_panels(at, "search_chunks")
    by_mode = {c["arguments"]["mode"]: (c, e) for c, e in panels[1:]}
    assert by_mode["keyword"][0]["arguments"]["minScore"] == 5.0
    assert "minScore" not in by_mode["vector"][0]["arguments"] and "minScore" not in by_mode["hybrid"][0]["arguments"]
    assert by_mode["hybrid"][1]["count"] > 0 and by_mode["vector"][1]["count"] > 0
    assert any("only that column applies it" in c.value for c in at.caption)


def test_files_list_documents_with_node_and_chunk_link(app, sample_engine):
    at = app("explore")
    call, shown = _panel(at, "list_documents")
    assert call["arguments"] == {"collectionPath": SAMPLE_COLLECTION}
    assert shown == call_tool(sample_engine, "list_documents", call["arguments"])
    table = next(m.value for m in at.markdown if m.value.startswith("| filePath |"))
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    assert {"type", "pages", "chunks", "status", "reason", "encoding", "OCR pages"} <= set(header)
    assert len(table.splitlines()) == 2 + len(shown["documents"])
    pick = next(d for d in shown["documents"] if d["chunkCount"])
    at.selectbox(key="doc").set_value(pick["filePath"]).run()
    node_call, node = _panel(at, "get_document")
    assert node_call["arguments"] == {"documentPath": pick["documentPath"]} and node["found"]
    next(b for b in at.button if b.label == "Open its chunks").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Chunk" and at.query_params["f"] == pick["filePath"]


# -- failure arms --------------------------------------------------------------------------
ARMS = [
    (401, "embedding-credential-rejected", "error"),
    (404, "embedding-request-rejected", "error"),
    (503, "embedding-unavailable", "warning"),
]


@pytest.mark.parametrize("status,code,kind", ARMS)
def test_provider_refusal_shows_its_own_callout(monkeypatch, tmp_path, embed_stub, status, code, kind):
    # the samples indexed without vectors: no stored model's vectors to serve the search
    # meanwhile, so the query goes to the configured (refusing) provider
    keyword_only = Settings(
        db=str(tmp_path / "index.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS
    ).validate()
    eng = Engine(keyword_only)
    eng.add_collection(SAMPLE_COLLECTION, str(SAMPLES))
    assert eng.run_index()["indexed"] > 0
    eng.close()
    _env(
        monkeypatch,
        keyword_only,
        EMBED_PROVIDER="ollama",
        EMBED_URL=embed_stub.url,
        EMBED_MODEL="stub-embed",
        EMBED_RETRIES="0",
        EMBED_TIMEOUT="5",
    )
    monkeypatch.setenv("EMBED_PROVIDER", "ollama")
    embed_stub.reply = Reply(status, ollama_error(f"stub refusal {status}"))
    at = AppTest.from_file(APP, default_timeout=90).run()
    for k, v in {"q": QUERY, "scope": SAMPLE_COLLECTION, "mode": "vector"}.items():
        at.query_params[k] = v
    at.switch_page(PAGE["explore"]).run()
    assert not at.exception, at.exception
    callouts = [c.value for c in getattr(at, kind) if code in c.value]
    assert len(callouts) == 1, (code, _texts(at.error), _texts(at.warning))
    text = callouts[0]
    assert WHO_FIXES[code] in text and f"HTTP status {status}" in text and "stub refusal" in text
    assert not any("Searched, 0 hits" in i.value for i in at.info)
    _call, shown = _panel(at, "search_chunks")
    assert shown["searched"] is False and shown["error"] == code and "count" not in shown
    # the Status page shows the same classified failure for the probe
    at.switch_page(PAGE["status"]).run()
    at.button(key="status_probe").click().run()
    assert any(code in c.value for c in getattr(at, kind)), _texts(getattr(at, kind))


def test_provider_none_shows_search_not_performed(monkeypatch, sample_index):
    _env(monkeypatch, sample_index, EMBED_PROVIDER="none")
    at = AppTest.from_file(APP, default_timeout=90).run()
    for k, v in {"q": QUERY, "scope": SAMPLE_COLLECTION, "mode": "vector"}.items():
        at.query_params[k] = v
    at.switch_page(PAGE["explore"]).run()
    callouts = [w.value for w in at.warning if "search-not-performed" in w.value]
    assert len(callouts) == 1 and WHO_FIXES["search-not-performed"] in callouts[0]
    assert not at.error
    # auto mode falls back to keyword search and says so
    at.query_params["mode"] = "auto"
    at.switch_page(PAGE["explore"]).run()
    _call, shown = _panel(at, "search_chunks")
    assert shown["searched"] is True and shown["mode"] == "keyword" and shown["count"] > 0


# -- chunk -----------------------------------------------------------------------------------
def _multi_chunk_file(engine: Engine) -> tuple[str, int]:
    docs = sorted(engine.store.documents(SAMPLE_COLLECTION), key=lambda d: -d.chunk_count)
    assert docs and docs[0].chunk_count >= 3
    return docs[0].file_path, docs[0].chunk_count


def test_next_moves_to_next_index_and_is_disabled_at_the_end(app, sample_engine):
    f, total = _multi_chunk_file(sample_engine)
    at = app("chunk", c=SAMPLE_COLLECTION, f=f, i=0)
    assert at.button(key="prev").disabled and not at.button(key="next").disabled
    _call, env = _panel(at, "get_chunk")
    assert env["nextIndex"] == 1 and env["totalChunks"] == total
    at.button(key="next").click().run()
    assert at.query_params["i"] == "1"
    _call, env = _panel(at, "get_chunk")
    assert env["chunkIndex"] == 1 and env["prevIndex"] == 0
    assert at.slider(key="chunk_pos").value == 1 and at.slider(key="chunk_pos").max == total - 1
    # the position slider jumps
    at.slider(key="chunk_pos").set_value(total - 1).run()
    assert at.query_params["i"] == str(total - 1)
    _call, env = _panel(at, "get_chunk")
    assert env["nextIndex"] is None
    assert at.button(key="next").disabled and not at.button(key="prev").disabled
    at.button(key="prev").click().run()
    assert at.query_params["i"] == str(total - 2)


def test_chunk_marks_overlap_and_links_full_text(app, sample_engine):
    f, _total = _multi_chunk_file(sample_engine)
    at = app("chunk", c=SAMPLE_COLLECTION, f=f, i=1, full=1)
    html = _texts(at.markdown)
    assert html.count('class="cn-ovl"') == 2 and "150 characters shared" in _texts(at.caption)
    call, doc = _panel(at, "read_document")
    assert doc == call_tool(sample_engine, "read_document", call["arguments"]) and doc["found"]
    assert 'class="cn-span"' in html  # the chunk outlined inside the full text


def test_first_and_last_chunk_captions_name_no_missing_neighbour(app, sample_engine):
    f, total = _multi_chunk_file(sample_engine)
    for i, neighbour in ((0, 1), (total - 1, total - 2)):
        at = app("chunk", c=SAMPLE_COLLECTION, f=f, i=i)
        caps = _texts(at.caption)
        assert "None" not in caps and "0 shared" not in caps
        assert f"shared with chunk {neighbour}." in caps


def test_chunk_out_of_range_is_an_answer(app):
    at = app("chunk", c=SAMPLE_COLLECTION, f="minimal-document.pdf", i=999)
    assert any("out of range" in w.value for w in at.warning)
    assert not at.exception


# -- source ------------------------------------------------------------------------------
def _warnings_of(at) -> list[str]:
    return [w.value for w in at.warning]


def test_source_renders_every_page_of_the_chunk_with_line_rects(app, sample_engine):
    at = app("source", c=SAMPLE_COLLECTION, f="multicolumn.pdf", i=1)
    chunk = call_tool(
        sample_engine,
        "get_chunk",
        {"collectionPath": SAMPLE_COLLECTION, "filePath": "multicolumn.pdf", "chunkIndex": 1},
    )
    first = chunk["regions"][0]
    last = at.session_state["_last_render"]
    assert (last["page"], last["source"], last["boxes"]) == (chunk["page"], "rects", len(first["rects"]))
    assert sum(m.value.startswith("**Page ") for m in at.markdown) == len({r["page"] for r in chunk["regions"]})
    assert any(f"**Page {chunk['page']}**" in m.value for m in at.markdown)
    at.select_slider(key="src_zoom").set_value(3.0).run()
    assert at.query_params["zoom"] == "3"
    assert at.session_state["_last_render"]["pageWidthPx"] >= 2.9 * last["pageWidthPx"]
    at.radio(key="src_view").set_value("Whole pages").run()
    assert at.query_params["view"] == "page" and not _warnings_of(at)
    at.button(key="src_next").click().run()
    assert at.query_params["i"] == "2" and at.query_params["zoom"] == "3"
    assert at.session_state["_last_render"]["zoom"] == 3.0
    assert not at.exception


def test_source_of_text_file_highlights_the_span(app, sample_engine):
    f = next(
        d.file_path
        for d in sample_engine.store.documents(SAMPLE_COLLECTION)
        if not d.file_path.endswith(".pdf") and d.chunk_count > 1
    )
    at = app("source", c=SAMPLE_COLLECTION, f=f, i=1)
    assert 'class="cn-span"' in _texts(at.markdown)
    call, doc = _panel(at, "read_document")
    chunk = call_tool(sample_engine, "get_chunk", {"collectionPath": SAMPLE_COLLECTION, "filePath": f, "chunkIndex": 1})
    assert doc["offset"] <= chunk["start"] and chunk["end"] <= doc["offset"] + len(doc["text"])
    assert chunk["text"] in doc["text"]
    # the text starts just before the chunk (so it is at the top of the box) and the overlaps are marked
    assert chunk["start"] - doc["offset"] <= 240
    assert 'class="cn-ovl"' in _texts(at.markdown)


# -- rebuild ------------------------------------------------------------------------------
@pytest.fixture
def small_index(tmp_path, monkeypatch):
    root = tmp_path / "docs"
    root.mkdir()
    for name in ("minimal-document.pdf", "sample-french-1.txt"):
        shutil.copy(SAMPLES / name, root / name)
    settings = Settings(
        embed_model="l2_supercat_256",
        db=str(tmp_path / "index.db"),
        allowed_roots=ALLOWED_ROOTS,
        embed_provider="local",
    ).validate()
    eng = Engine(settings)
    eng.add_collection("Small", str(root))
    eng.close()
    _env(monkeypatch, settings)
    yield settings, root
    st.cache_resource.clear()


def _wait_for_run(at: AppTest, timeout_s: float = 90) -> AppTest:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        at.run()
        if any("Run finished" in m.value for m in at.markdown):
            return at
        time.sleep(0.3)
    raise AssertionError("the run did not finish")


@pytest.mark.parametrize("button,forced", [("rebuild", True), ("reindex", False)])
def test_rebuild_runs_and_shows_its_summary(small_index, button, forced):
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page(PAGE["rebuild"]).run()
    at.button(key=button).click().run()
    assert not at.exception, at.exception
    _wait_for_run(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["files seen"] == "2" and metrics["indexed"] == "2"
    assert ("forced rebuild" if forced else "hash-gated") in _texts(at.caption)
    # a hash-gated run right after skips both files
    at.button(key="reindex").click().run()
    _wait_for_run(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["unchanged"] == "2" and not [k for k in metrics if "skipped" in k]
    assert "unchanged: 2" in _texts(at.caption) and "skipped: 0" in _texts(at.caption)


def test_second_start_while_running_starts_nothing(small_index):
    from explorer.jobs import IndexJob

    settings, _root = small_index
    job, eng = IndexJob(), Engine(settings)
    try:
        assert job.start(eng, force=True) is True
        assert job.start(eng, force=True) is False  # refused while the first is active
        assert job.wait(90)
        snap = job.snapshot()
        assert snap["status"] == "done" and job.runs_started == 1 and snap["summary"]["indexed"] == 2
    finally:
        eng.close()


def test_cancel_button_stops_the_run_and_keeps_what_it_committed(small_index):
    """Cancel on the Rebuild page: the run ends cancelled, its counts shown, what it committed kept."""
    _settings, root = small_index
    for i in range(400):
        (root / f"extra-{i:03d}.txt").write_text(f"extra file {i} " * 50, "utf-8")
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page(PAGE["rebuild"]).run()
    assert at.button(key="cancel").disabled  # nothing to cancel yet
    at.button(key="rebuild").click().run()
    assert not at.button(key="cancel").disabled
    at.button(key="cancel").click().run()
    deadline = time.time() + 90
    while time.time() < deadline:
        at.run()
        if any(m.value.startswith("**Run ") for m in at.markdown):
            break
        time.sleep(0.3)
    heads = [m.value for m in at.markdown if m.value.startswith("**Run ")]
    assert heads and "Run cancelled" in heads[0], heads
    assert "Run **cancelled**" in _texts(at.caption)
    assert any("abandoned" in w.value and "committed" in w.value for w in at.warning)
    at.button(key="reindex").click().run()  # the next run carries on and finishes
    _wait_for_run(at)


def test_cancel_button_stops_a_run_inside_an_ocr_job_within_seconds(small_index, monkeypatch):
    """Cancel while a scan is OCR'd (seconds a page): the page names the file in flight, the run
    ends cancelled within 3 s, the sidebar says so with its counts, the index stays intact."""
    import pymupdf

    from tests.index.test_cancel import LIMIT_S, _scan_pdf

    settings, root = small_index
    _scan_pdf(root / "scan.pdf")
    monkeypatch.setenv("CHUNKNAV_OCR", "force")
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page(PAGE["rebuild"]).run()
    at.button(key="rebuild").click().run()

    def reading_scan() -> bool:  # the page names the scan in flight
        at.run()
        return any("Reading now" in c.value and "scan.pdf" in c.value for c in at.caption)

    wait_until(reading_scan, 120, "the Rebuild page naming scan.pdf in flight")
    asked = time.monotonic()
    at.button(key="cancel").click().run()
    from explorer import state

    assert state.job().wait(LIMIT_S + 5)
    took = time.monotonic() - asked
    assert took < LIMIT_S, took
    at.run()
    heads = [m.value for m in at.markdown if m.value.startswith("**Run ")]
    assert heads and "Run cancelled" in heads[0], heads
    assert any("Last run here cancelled" in c.value for c in at.sidebar.caption), _texts(at.sidebar.caption)
    eng = Engine(settings)
    try:
        assert eng.store.get_document("Small", "scan.pdf") is None and eng.store.last_run()["status"] == "cancelled"
    finally:
        eng.close()
    assert pymupdf  # the scan was a real PDF


def test_failed_files_listed_after_a_run(small_index):
    _settings, root = small_index
    (root / "broken.pdf").write_bytes(b"%PDF-1.7 not really")
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page(PAGE["rebuild"]).run()
    at.button(key="reindex").click().run()
    _wait_for_run(at)
    assert any("Files not indexed (1)" in m.value for m in at.markdown)
    at.switch_page(PAGE["status"]).run()
    assert any("Documents failed or without text (1)" in m.value for m in at.subheader)
    assert not any("not indexed" in m.value for m in at.subheader)  # one name per class, no contradiction


def test_add_and_remove_a_collection(small_index, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page(PAGE["rebuild"]).run()
    at.text_input(key="add_path").input("ACME/Reports")
    at.text_input(key="add_root").input(str(other))
    next(b for b in at.button if b.label == "Add collection").click().run()
    assert any("ACME/Reports" in s.value for s in at.success)
    at.text_input(key="add_root").input(str(tmp_path / "missing"))
    next(b for b in at.button if b.label == "Add collection").click().run()
    assert any("not a directory" in e.value for e in at.error)
    at.selectbox(key="remove_path").set_value("Small")
    at.button(key="remove").click().run()
    assert any("Remove `Small`?" in w.value for w in at.warning)
    at.selectbox(key="remove_path").set_value("ACME/Reports").run()  # another one picked: no stale question
    assert not any("Remove `Small`?" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "confirm_remove"]
    at.button(key="remove").click().run()
    assert not any("Removed `ACME/Reports`" in s.value for s in at.success)  # asks first
    assert any("Remove `ACME/Reports`?" in w.value and "0 documents" in w.value for w in at.warning)
    at.button(key="confirm_remove").click().run()
    assert any("Removed `ACME/Reports`" in s.value for s in at.success)
    at.run()
    assert "ACME/Reports" not in at.selectbox(key="remove_path").options


def test_a_root_that_vanished_is_named_on_status_and_rebuild(small_index):
    """The Status page and the run summary name the collection whose root could not
    be listed, with the reason; its documents are listed stale."""
    settings, root = small_index
    eng = Engine(settings)
    try:
        eng.run_index()
        root.rename(root.with_name("docs-gone"))
        summary = eng.run_index()
    finally:
        eng.close()
    assert summary["rootErrors"][0]["code"] == "root-missing"
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page(PAGE["status"]).run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error if "cannot be listed" in e.value]
    assert len(errors) == 1 and "`Small`" in errors[0] and str(root) in errors[0] and "root-missing" in errors[0]
    assert any("Indexed, kept while their file cannot be read (2)" in m.value for m in at.subheader)
    shown = "\n".join(t.value for t in at.markdown)
    assert "minimal\\-document\\.pdf" in shown and "root\\-missing" in shown  # Markdown-escaped cells
    # a run from the Rebuild page says the same, and so does the sidebar
    at.switch_page(PAGE["rebuild"]).run()
    at.button(key="reindex").click().run()
    _wait_for_run(at)
    assert any("`Small`" in e.value and "cannot be listed" in e.value for e in at.error)
    at.run()  # the sidebar is drawn before the page: the run may have ended in between
    assert any("1 collection root not listed" in c.value for c in at.sidebar.caption)


def test_first_start_indexes_the_samples(tmp_path, monkeypatch):
    """An empty index: the app adds assets/samples as 'Samples' and indexes it with a progress bar."""
    settings = Settings(
        embed_model="l2_supercat_256",
        db=str(tmp_path / "fresh.db"),
        allowed_roots=ALLOWED_ROOTS,
        embed_provider="local",
    ).validate()
    _env(monkeypatch, settings)
    at = AppTest.from_file(APP, default_timeout=90).run()
    assert not at.exception, at.exception
    from explorer import state

    job = state.job()
    assert job.runs_started == 1
    job.wait(120)
    at.run()
    assert any("Last run here" in c.value for c in at.sidebar.caption)
    eng = Engine(settings)
    try:
        assert [c.collection_path for c in eng.store.collections()] == ["Samples"]
        assert call_tool(eng, "index_status", {"probe": False})["chunks"] > 0
    finally:
        eng.close()


def _collections_of(settings: Settings) -> list[str]:
    eng = Engine(settings)
    try:
        return [c.collection_path for c in eng.store.collections()]
    finally:
        eng.close()


def _remove_on_rebuild(at: AppTest, name: str) -> AppTest:
    at.switch_page(PAGE["rebuild"]).run()
    at.selectbox(key="remove_path").set_value(name)
    at.button(key="remove").click().run()
    at.button(key="confirm_remove").click().run()
    assert any(f"Removed `{name}`" in s.value for s in at.success)
    at.run()
    assert not at.exception, at.exception
    return at


def test_removing_the_last_collection_sticks_no_samples_come_back(small_index):
    """The samples are offered only on a brand-new index; removing the user's last
    collection (in this process, in a new session, after a restart) adds nothing back."""
    from explorer import state

    settings, _root = small_index
    eng = Engine(settings)
    try:
        eng.run_index()
    finally:
        eng.close()
    at = _remove_on_rebuild(AppTest.from_file(APP, default_timeout=90).run(), "Small")
    at.switch_page(PAGE["status"]).run()
    assert _collections_of(settings) == [] and state.job().runs_started == 0
    AppTest.from_file(APP, default_timeout=90).run()  # another browser session
    assert _collections_of(settings) == [] and state.job().runs_started == 0
    st.cache_resource.clear()  # a restarted explorer: the index's run records remember
    AppTest.from_file(APP, default_timeout=90).run()
    assert _collections_of(settings) == [] and state.job().runs_started == 0


def test_the_samples_are_offered_once_and_removing_them_sticks(tmp_path, monkeypatch):
    from explorer import state

    settings = Settings(db=str(tmp_path / "fresh.db"), allowed_roots=ALLOWED_ROOTS, embed_provider="none").validate()
    _env(monkeypatch, settings)
    at = AppTest.from_file(APP, default_timeout=90).run()
    assert state.job().runs_started == 1 and state.job().wait(120)
    assert _collections_of(settings) == ["Samples"]
    _remove_on_rebuild(at, "Samples")
    at.run()
    AppTest.from_file(APP, default_timeout=90).run()
    assert _collections_of(settings) == [] and state.job().runs_started == 1
    st.cache_resource.clear()  # a restarted explorer
    AppTest.from_file(APP, default_timeout=90).run()
    assert _collections_of(settings) == [] and state.job().runs_started == 0


def test_status_lists_files_indexed_with_notes(app, sample_engine):
    """A text file decoded from a detected encoding is listed with its encoding and confidence."""
    direct = call_tool(sample_engine, "index_status", {"probe": False})
    noted = {n["filePath"]: n for n in direct["notes"]}
    assert noted["sample-french-1.txt"]["encoding"] == "cp1252"
    at = app("status")
    assert any(s.value == f"Indexed with notes ({len(noted)})" for s in at.subheader)
    text = _texts(at.markdown)
    assert "encodingConfidence" in text
    line = next(ln for ln in text.splitlines() if "sample\\-french\\-1\\.txt" in ln or "sample-french-1.txt" in ln)
    assert "cp1252" in line and "decoded as cp1252" in line


def test_a_too_long_query_link_is_cut_with_a_notice_and_the_tool_refuses_past_its_maximum(app):
    """A deep link carries at most explorer.links.MAX_TEXT_CHARS of query (cut, with a notice naming
    `q`); a call past the tool's own maximum is refused by name and shown as "Invalid argument"."""
    from engine.search.searcher import MAX_QUERY_CHARS
    from explorer.links import MAX_TEXT_CHARS

    at = app("explore", q="x" * (MAX_QUERY_CHARS + 1), scope=SAMPLE_COLLECTION)
    assert not at.exception, at.exception
    assert any("`q`" in w.value and f"cut to {MAX_TEXT_CHARS}" in w.value for w in at.warning)
    call, _shown = _panel(at, "search_chunks")
    assert len(call["arguments"]["query"]) == MAX_TEXT_CHARS

    def page():  # the page's own widget on a call past the tool's maximum
        from engine.search.searcher import MAX_QUERY_CHARS
        from explorer import widgets

        widgets.run_tool("search_chunks", {"query": "x" * (MAX_QUERY_CHARS + 1), "scope": "Samples"})

    one = AppTest.from_function(page, default_timeout=60).run()
    refused = [e.value for e in one.error if "Invalid argument" in e.value]
    assert len(refused) == 1 and "'query'" in refused[0] and "the most is" in refused[0]


@pytest.fixture
def paged_index(tmp_path, monkeypatch):
    """A collection of the other paged formats (XPS, EPUB, FB2 from tests/corpus/formats)."""
    root = tmp_path / "books"
    root.mkdir()
    for name in ("test_open2.xps", "test_open2.epub", "test_open2.fb2"):
        shutil.copy(Path(__file__).resolve().parents[1] / "corpus" / "formats" / name, root / name)
    settings = Settings(db=str(tmp_path / "index.db"), allowed_roots=ALLOWED_ROOTS, embed_provider="none").validate()
    eng = Engine(settings)
    eng.add_collection("Books", str(root))
    eng.run_index(["Books"])
    yield eng
    eng.close()
    st.cache_resource.clear()


@pytest.mark.parametrize("name", ["test_open2.xps", "test_open2.epub", "test_open2.fb2"])
def test_source_draws_the_page_of_a_chunk_from_other_paged_formats(monkeypatch, paged_index, name):
    _env(monkeypatch, paged_index.settings)
    chunk = call_tool(paged_index, "get_chunk", {"collectionPath": "Books", "filePath": name, "chunkIndex": 0})
    assert chunk["found"] and chunk["page"] >= 1 and chunk["regions"], chunk
    at = AppTest.from_file(APP, default_timeout=90).run()
    for k, v in {"c": "Books", "f": name, "i": 0}.items():
        at.query_params[k] = str(v)
    at.switch_page(PAGE["source"]).run()
    assert not at.exception, at.exception
    last = at.session_state["_last_render"]
    assert last["page"] == chunk["page"] and last["source"] in ("rects", "bbox") and last["boxes"] >= 1
    assert any(f"**Page {chunk['page']}**" in m.value for m in at.markdown)
    assert 'class="cn-span"' not in _texts(at.markdown)  # drawn as a page, not as text


def test_source_says_when_the_last_run_could_not_read_the_file(monkeypatch, tmp_path):
    """A PDF turned chmod 000 keeps its size and mtime: only the run's stale mark tells, and the
    Source page words it as that (not as a changed file) and draws no stored rectangle."""
    import subprocess
    import sys

    from tests.fixtures.hostile import DROP_CAPS, restore_permissions

    root = tmp_path / "docs"
    root.mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "corpus" / "pdf" / "minimal-document.pdf", root / "a.pdf")
    settings = Settings(db=str(tmp_path / "index.db"), allowed_roots=ALLOWED_ROOTS, embed_provider="none").validate()
    eng = Engine(settings)
    eng.add_collection("D", str(root))
    eng.run_index(["D"])
    eng.close()
    (root / "a.pdf").chmod(0)
    env = {**os.environ, "EMBED_PROVIDER": "none", "CHUNKNAV_ALLOWED_ROOTS": ALLOWED_ROOTS}
    try:
        run = subprocess.run(
            DROP_CAPS + [sys.executable, "-m", "engine", "--db", settings.db, "index", "--json"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert [s["filePath"] for s in json.loads(run.stdout)["stale"]] == ["a.pdf"], run.stdout + run.stderr
        _env(monkeypatch, settings)
        at = AppTest.from_file(APP, default_timeout=90).run()
        for k, v in {"c": "D", "f": "a.pdf", "i": 0}.items():
            at.query_params[k] = str(v)
        at.switch_page(PAGE["source"]).run()
        assert not at.exception, at.exception
        said = " ".join(w.value for w in at.warning)
        assert "The last index run could not read this file (unreadable: " in said, said
        assert "changed after it was indexed" not in said
    finally:
        restore_permissions(tmp_path)
        st.cache_resource.clear()


def test_rebuild_preview_is_the_plan_and_writes_nothing(app, sample_engine):
    at = app("rebuild")
    at.toggle(key="preview").set_value(True).run()
    assert not at.exception, at.exception
    call, env = _panel(at, "plan_index")
    assert call == {"name": "plan_index", "arguments": {"limit": 200}}
    assert env == call_tool(sample_engine, "plan_index", {"limit": 200})
    assert any("nothing written" in c.value for c in at.caption)


def test_status_coverage_is_the_coverage_tool(app, sample_engine):
    at = app("status")
    at.toggle(key="status_coverage").set_value(True).run()
    assert not at.exception, at.exception
    call, env = _panel(at, "coverage")
    assert env == call_tool(sample_engine, "coverage", {})
    assert env["rows"][0]["fileType"] == "*" and env["rows"][0]["indexed"] > 0


def test_sidebar_names_a_run_of_another_process_cancelled_with_its_counts(small_index):
    """A run the CLI cancelled (its record) is shown in the sidebar as cancelled, with its counts."""
    from engine.index.runs import new_summary

    settings, _root = small_index
    eng = Engine(settings)
    run = new_summary(False, ["Small"], "2026-01-01T00:00:00+00:00")
    eng.store.save_run({**run, "status": "cancelled", "indexed": 1, "seconds": 2.5})
    eng.close()
    at = AppTest.from_file(APP, default_timeout=90).run()
    assert any("Last run cancelled: 1 indexed" in c.value for c in at.sidebar.caption), _texts(at.sidebar.caption)
