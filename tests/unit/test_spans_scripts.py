"""Names in any script are phrases (issue 35): the proper-noun pattern starts at any Unicode
capital, a name keeps its combining marks, sentences split before any capital, and text is
read in NFC (kgdb/documents/spans.py)."""

from __future__ import annotations

import unicodedata

import pytest

from kgdb.documents.spans import phrase_id, phrases, proper_noun_spans, sentences

NAMES = ["Łukasz Żebrowski", "Čeněk Šťastný", "İlkay Şahinoğlu", "Jānis Bērziņš",
         "Žygimantas Čiurlys", "Αλέξανδρος Παπαδόπουλος", "Дмитрий Соколов", "Ǆore Ǉubić"]


@pytest.mark.parametrize("name", NAMES)
def test_a_name_in_any_script_is_a_phrase(name):
    text = f"The painter {name} was born in 1901. Later {name} moved to the coast."
    assert proper_noun_spans(text) == [name, name]
    assert phrase_id(name) in phrases(text)


@pytest.mark.parametrize("city", ["Łódź", "Šiauliai", "Θεσσαλονίκη", "Новосибирск", "Ömerli"])
def test_sentences_split_before_any_capital(city):
    text = f"He was born in Warsaw. {city} is where he died."
    assert sentences(text) == ["He was born in Warsaw.", f"{city} is where he died."]
    assert "Warsaw" in proper_noun_spans(text) and city in proper_noun_spans(text)


def test_nfd_text_gives_the_nfc_phrase():
    nfc = "Café Noir opened in Zürich. Its owner was Émile Brontë."
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfd != nfc
    assert phrases(nfd) == phrases(nfc)
    assert "café noir" in phrases(nfd) and "émile brontë" in phrases(nfd)
    assert phrase_id(unicodedata.normalize("NFD", "Café")) == "café"


def test_latin_rules_are_kept():
    text = ("The U.S. Navy hired Albert S. Rogell. Warner Bros. Records paid Mr. Smith in "
            "St. Louis. He left.")
    assert proper_noun_spans(text) == ["U.S. Navy", "Albert S. Rogell", "Warner Bros. Records",
                                       "Mr. Smith in St. Louis"]
    assert sentences(text)[-1] == "He left."
