"""Which code page a non-UTF-8 text file is read in (engine/extract/text.py ``decode``,
engine/extract/codepages.py ``choose_latin``), over a table of real sentences in many
languages, each encoded with Python's codecs in the code page people write it in
(sentences written for this test). Latin-1 French / Portuguese text must not be read as
cp1250 (``crčme``, ``situaçăo``) with confidence 1.00 and no low-confidence note."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import Settings
from engine.extract import extract
from engine.extract.codepages import choose_latin
from engine.extract.text import LOW_CONFIDENCE, decode
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

#: (language, codec written with, text). Two sentences per language where the
#: language has a distinctive letter in each; else one sentence three times.
TABLE = [
    ("French", "latin-1", "Le garçon a mangé une crème brûlée à Noël. Ça coûte très cher.\n" * 3),
    ("French", "latin-1", "Où est la bibliothèque? À côté de l'hôtel. Très bien, merci. Façade, garçon, reçu.\n" * 3),
    (
        "French",
        "cp1252",
        "L'été dernier, nous sommes allés à la mer ; l'eau était fraîche et les enfants ont "
        "joué près du phare. « Œuvre » coûte cher.\n" * 3,
    ),
    ("Portuguese", "latin-1", "A situação é difícil, mas não impossível. Ação, coração, informação, avó.\n" * 3),
    (
        "Portuguese",
        "cp1252",
        "Os irmãos viajaram para São Paulo em março; lá conheceram três músicos que tocavam violão na praça.\n" * 3,
    ),
    (
        "Spanish",
        "latin-1",
        "El niño pidió una canción más antigua; su abuela, que vivía en León, sonrió y cantó en voz baja.\n" * 3,
    ),
    ("Italian", "latin-1", "Perché la città è così bella? Perché là c'è più verità, e ciò basterà.\n" * 3),
    (
        "German",
        "latin-1",
        "Die Größe der Straße ist für Müller übermäßig schön, aber die Bürger wählen trotzdem.\n" * 3,
    ),
    (
        "Dutch",
        "latin-1",
        "Hij ging naar het café om een ideeën te bespreken; de reünie was in België, bij de coöperatie.\n" * 3,
    ),
    (
        "Danish",
        "latin-1",
        "Det er en smuk dag på øen, og børnene løber ned til søen for at bade i det kølige vand.\n" * 3,
    ),
    ("Swedish", "latin-1", "Vi åkte till sjön på söndagen och åt smörgåsar medan solen gick ner bakom träden.\n" * 3),
    ("Finnish", "latin-1", "Hyvää päivää! Järvellä oli hiljaista, ja mökin pihalla kävi vain muutama lintu.\n" * 3),
    ("Icelandic", "latin-1", "Það var kalt í veðri þegar við komum til Reykjavíkur, en fólkið var vingjarnlegt.\n" * 3),
    (
        "Czech",
        "cp1250",
        "Příliš žluťoučký kůň úpěl ďábelské ódy. Čeština je krásný jazyk a učí se ji mnoho lidí.\n"
        "Včera jsme byli na výletě v horách, kde bylo velmi chladno, ale výhled stál za to.\n",
    ),
    (
        "Polish",
        "cp1250",
        "Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig.\n"
        "Wczoraj poszliśmy do kina, a potem zjedliśmy kolację w małej restauracji przy rynku.\n",
    ),
    (
        "Polish",
        "iso8859_2",
        "Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig.\n"
        "Wczoraj poszliśmy do kina, a potem zjedliśmy kolację w małej restauracji przy rynku.\n",
    ),
    (
        "Hungarian",
        "cp1250",
        (
            "Árvíztűrő tükörfúrógép. Öt szép szűz lány őrült írót nyúz.\n"
            "Tegnap elmentünk a piacra, ahol friss gyümölcsöt és zöldséget vásároltunk.\n"
        )
        * 2,
    ),
    ("Slovak", "cp1250", "Včera sme boli v meste, kde sme si kúpili nové topánky a zjedli zmrzlinu v parku.\n" * 3),
    ("Croatian", "cp1250", "Jučer smo išli na izlet, a djeca su se igrala pokraj rijeke dok je sunce grijalo.\n" * 3),
    ("Slovenian", "cp1250", "Včeraj smo šli na sprehod ob jezeru in videli veliko čolnov ter labodov.\n" * 3),
    ("Romanian", "cp1250", "Ieri am mers la piaţă şi am cumpărat fructe proaspete pentru întreaga familie.\n" * 3),
    ("Turkish", "cp1254", "Dün akşam arkadaşlarımızla birlikte güzel bir yemek yedik ve çok güldük.\n" * 3),
    ("Lithuanian", "cp1257", "Vakar mes ėjome į parką ir ilgai vaikščiojome palei upę, kol sutemo.\n" * 3),
    ("Estonian", "cp1257", "Eile käisime pargis ja jalutasime kaua jõe ääres, kuni läks pimedaks.\n" * 3),
    ("Russian", "cp1251", "Вчера мы ходили в парк и долго гуляли вдоль реки, пока не стемнело.\n" * 3),
    ("Russian", "koi8_r", "Вчера мы ходили в парк и долго гуляли вдоль реки, пока не стемнело.\n" * 3),
    ("Greek", "cp1253", "Χθες πήγαμε στη θάλασσα και κολυμπήσαμε μέχρι να δύσει ο ήλιος.\n" * 3),
    ("Chinese", "big5", "昨天我們去公園散步，天氣很好，大家都很開心。\n" * 3),
    ("Chinese", "gb18030", "昨天我们去公园散步，天气很好，大家都很开心。\n" * 3),
    ("Japanese", "shift_jis", "昨日は公園を散歩しました。天気がとても良くて、みんな楽しそうでした。\n" * 3),
    ("Korean", "euc_kr", "어제 우리는 공원에 가서 산책을 했습니다. 날씨가 아주 좋았습니다.\n" * 3),
    ("German", "utf-16", "Die Größe der Straße ist für Müller übermäßig schön.\n" * 3),
    ("German", "utf-16-le", "Die Groesse der Strasse: Waerme und Kaelte, zweite Fassung.\n" * 3),
]


def _id(row):
    return f"{row[0]}-{row[1]}"


@pytest.mark.parametrize("row", TABLE, ids=[_id(r) for r in TABLE])
def test_sentence_decodes_to_its_own_text(row):
    _lang, codec, text = row
    d = decode(text.encode(codec))
    assert d.text == text, (d.encoding, d.text[:80])
    assert 0.0 <= d.confidence <= 1.0
    if d.confidence < LOW_CONFIDENCE:
        assert any(n.startswith("low-confidence decoding as") for n in d.notes)


CORPUS_TEXT = Path(__file__).resolve().parents[1] / "corpus" / "text"
#: Longer real text (tests/corpus/text, see SOURCES.md) re-encoded in the code pages its
#: language is written in (a character a page lacks becomes "?"): read back exactly.
RECODED = (
    [("sample-french-1.txt", c) for c in ("latin-1", "cp1252", "iso8859_15", "mac_roman", "cp850")]
    + [("sample-polish.txt", c) for c in ("cp1250", "iso8859_2", "mac_latin2", "cp852")]
    + [("sample-russian-3.txt", c) for c in ("cp1251", "koi8_r", "iso8859_5", "cp866")]
    + [("sample-arabic.txt", c) for c in ("cp1256", "iso8859_6")]
)


@pytest.mark.parametrize("name,codec", RECODED, ids=[f"{n}-{c}" for n, c in RECODED])
def test_corpus_text_recoded_reads_back(name, codec):
    data = decode((CORPUS_TEXT / name).read_bytes()).text.encode(codec, "replace")
    d = decode(data)
    assert d.text == data.decode(codec), (d.encoding, d.confidence)
    if d.confidence < LOW_CONFIDENCE:
        assert d.notes[-1].startswith("low-confidence decoding as")


def test_latin1_files_are_cp1252_with_an_honest_confidence():
    """Three Latin-1 French / Portuguese texts: Windows-1252 (a superset of Latin-1 on these bytes), and
    the confidence stays high because no other code page's text is one language's."""
    for text in (TABLE[0][2], TABLE[1][2], TABLE[3][2]):
        d = decode(text.encode("latin-1"))
        assert d.encoding == "cp1252" and d.text == text
        assert d.confidence >= LOW_CONFIDENCE and len(d.notes) == 1, d
    assert decode(TABLE[3][2].encode("latin-1")).language == "Portuguese"


def test_genuine_central_european_text_stays_cp1250():
    for lang in ("Czech", "Polish", "Hungarian"):
        text = next(t for la, c, t in TABLE if la == lang and c == "cp1250")
        d = decode(text.encode("cp1250"))
        assert d.encoding == "cp1250" and d.language == lang and d.confidence >= LOW_CONFIDENCE, d


def test_text_the_detector_gives_up_on_is_still_read_by_its_alphabet(tmp_path):
    """charset-normalizer finds no encoding for this Polish cp1250 text (its ``best()`` is
    None; read as latin-1 it would hold C1 controls); the alphabet rule reads it, and bytes no language writes stay latin-1 with the low-confidence note."""
    from charset_normalizer import from_bytes

    text = "Zażółć gęślą jaźń. Łódź jest dużym miastem w Polsce, mówił Paweł.\n" * 3
    data = text.encode("cp1250")
    assert from_bytes(data).best() is None  # the case: the detector gives up
    d = decode(data)
    assert d.encoding == "cp1250" and d.text == text and d.language == "Polish", d
    noise = bytes((i * 151 + 89) % 128 + 128 for i in range(3000))
    n = decode(noise)
    assert n.encoding == "latin-1" and n.confidence == 0.0 and "low confidence" in n.notes[0], n
    (tmp_path / "pl.txt").write_bytes(data)
    eng = Engine(Settings(db=str(tmp_path / "i.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate())
    try:
        eng.add_collection("P", str(tmp_path))
        eng.run_index()
        hits = call_tool(eng, "search_chunks", {"query": "Łódź", "scope": "P", "mode": "keyword"})
        assert hits["count"] == 1, hits
    finally:
        eng.close()


def test_confidence_is_lowered_when_another_page_reads_as_well():
    """Catalan ``anàvem ... més``: cp1250 reads ``anŕvem``, and ``ŕ é`` are both Slovak
    letters, so the bytes alone cannot tell: the choice is cp1252 (the preference) and the
    confidence says it is a coin toss."""
    text = "A l'estiu anàvem a la platja; la mare deia que l'aigua era més freda que l'any passat.\n" * 8
    d = decode(text.encode("latin-1"))
    assert d.text == text and d.encoding == "cp1252"
    assert d.confidence <= 0.5 and d.notes[1] == "low-confidence decoding as cp1252: some text may be wrong"
    c = choose_latin(text.encode("latin-1"))
    assert c.runner_up_encoding == "cp1250" and c.runner_up_misfits == c.misfits == 0 and c.separation == 0.5


def test_c1_controls_rule_out_iso_pages_and_symbols_inside_words_count():
    # 0x9C is œ in cp1252 and a C1 control in ISO 8859-15: never the runner-up here.
    c = choose_latin("Le cœur a ses raisons; un œuf, une sœur, le chœur et l'œil.\n".encode("cp1252") * 3)
    assert c.encoding == "cp1252" and c.runner_up_encoding not in ("iso8859_15", "latin_1")
    # Polish in cp1250 read as cp1252 gives ``ma³ej``: a symbol inside a word is a misfit.
    c = choose_latin("w małej restauracji, ładny dzień, białe łóżka\n".encode("cp1250") * 3)
    assert c.encoding == "cp1250" and c.runner_up_encoding == "cp1252" and c.runner_up_misfits >= 6


def test_latin1_files_are_found_by_their_words(tmp_path):
    """End to end: indexed, ``crème`` and ``très`` are found (never stored as ``crčme`` /
    ``trčs``)."""
    root = tmp_path / "enc2"
    root.mkdir()
    (root / "pt_latin1.txt").write_bytes(TABLE[3][2].encode("latin-1"))
    (root / "fr2_latin1.txt").write_bytes(TABLE[1][2].encode("latin-1"))
    (root / "latin1.txt").write_bytes(TABLE[0][2].encode("latin-1"))
    engine = Engine(Settings(allowed_roots=ALLOWED_ROOTS, db=str(tmp_path / "i.db"), embed_provider="none").validate())
    try:
        engine.add_collection("Enc2", str(root))
        assert engine.run_index()["indexed"] == 3
        for query, files in (
            ("crème", {"latin1.txt"}),
            ("très", {"latin1.txt", "fr2_latin1.txt"}),
            ("situação", {"pt_latin1.txt"}),
        ):
            r = call_tool(engine, "search_chunks", {"query": query, "scope": "Enc2", "mode": "keyword"})
            assert {h["filePath"] for h in r["hits"]} == files, (query, r)
        x = extract(root / "pt_latin1.txt")
        assert x.metadata["encoding"] == "cp1252" and "situação" in x.text
    finally:
        engine.close()
