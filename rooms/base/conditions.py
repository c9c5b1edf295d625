"""Whether an approval depends on something not yet done (DESIGN §3: when in doubt, not approved).

The clause attached to an approval is the rest of its marker line, and the visible line right
after it. That clause makes the approval **conditional** when, in any of the languages below:

1. it *opens* with a condition form (`LGTM except …`, `APPROVED, if you add …`, `Approved once CI
   passes`, next line `provided the changelog …`, `단, …`, `ただし…`): the approval is granted
   only on what follows;
2. it holds, anywhere, a form that is only ever a condition (`as long as`, `subject to`,
   `provided that`, `vorausgesetzt`, `à condition que`, `siempre que`, `при условии`, `前提是`,
   `조건으로`…);
3. it holds a form that is a condition or a description (`if`, `once`, `when`, `after`, `wenn`,
   `quand`, `면`, `たら`, `后`…) *together with* a word saying something is still to do
   (`must`, `need to`, `muss noch`, `doit`, `hay que`, `해야`, `必要`, `需要`…): "the retry must
   stop once the deadline passes".

The visible line after the marker line counts by rules 1 and 2 only: it is where reasons and
explanations usually start ("PROCEED" / "The owner's test must pass, and it does"), so only a line
that opens on a condition, or holds a condition-only form, makes the approval conditional.

A form of kind 3 alone is an **explanation** of what was verified, not a condition: "APPROVED —
the retry now stops once the deadline passes, because …" is an approval. A still-to-do word with
no condition form at all ("APPROVED — the docs need a changelog entry") is **uncertain**: the
text says something is not done but not that the approval waits for it; the turn is then not an
approval (unchanged rule) and the reading says so (`doubt="uncertain"`), so it can be counted.

Latin and Cyrillic forms match as whole words, in any case; Hangul, kana and Han forms match as
they stand (those scripts attach them to the word before, or write no spaces). Standard library
only, like markers.py, which reads its clauses through `condition_of`.
"""

from __future__ import annotations

import re
from typing import Literal

Condition = Literal["conditional", "uncertain"]

# Per language: (opens a condition, a condition anywhere, a condition or a description, still
# to do). A language's forms are lower case; the order of the languages does not matter.
_FORMS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "en": (
        (
            "except",
            "excepting",
            "once",
            "if",
            "only if",
            "unless",
            "but",
            "however",
            "though",
            "although",
            "pending",
            "provided",
            "providing",
            "assuming",
            "until",
            "after",
            "when",
            "apart from",
            "other than",
            "save for",
            "barring",
            "conditional",
            "conditionally",
            "not",
            "as soon as",
            "before",
        ),
        (
            "as long as",
            "so long as",
            "subject to",
            "provided that",
            "providing that",
            "on condition",
            "conditional on",
            "contingent on",
            "only if",
            "only once",
            "unless",
            "except",
            "pending",
            "on the condition",
        ),
        ("if", "once", "when", "after", "until", "before", "as soon as"),
        (
            "must",
            "need to",
            "needs to",
            "has to",
            "have to",
            "still needs",
            "still need",
            "yet to",
            "not yet",
            "todo",
        ),
    ),
    "de": (
        (
            "außer",
            "ausser",
            "sobald",
            "wenn",
            "falls",
            "nur wenn",
            "aber",
            "jedoch",
            "sofern",
            "vorausgesetzt",
            "nachdem",
            "bis",
        ),
        (
            "vorausgesetzt",
            "sofern",
            "unter der bedingung",
            "nur wenn",
            "nur falls",
            "solange",
            "unter vorbehalt",
            "vorbehaltlich",
        ),
        ("wenn", "falls", "sobald", "nachdem", "bis", "bevor"),
        ("muss", "müssen", "noch nicht", "fehlt noch"),
    ),
    "fr": (
        (
            "sauf",
            "si",
            "une fois",
            "mais",
            "cependant",
            "pourvu",
            "après",
            "quand",
            "lorsque",
            "à condition",
        ),
        (
            "à condition que",
            "à condition de",
            "sous réserve",
            "pourvu que",
            "tant que",
            "seulement si",
            "uniquement si",
            "à moins que",
        ),
        ("si", "quand", "lorsque", "une fois", "après", "avant"),
        (
            "doit",
            "doivent",
            "il faut",
            "il faudra",
            "faut",
            "pas encore",
            "merci de",
            "veuillez",
            "reste à",
        ),
    ),
    "es": (
        (
            "excepto",
            "salvo",
            "si",
            "una vez",
            "pero",
            "sin embargo",
            "siempre que",
            "cuando",
            "después",
        ),
        (
            "siempre que",
            "siempre y cuando",
            "con la condición",
            "a condición de",
            "solo si",
            "sólo si",
            "sujeto a",
            "a menos que",
            "mientras",
        ),
        ("si", "cuando", "una vez", "después", "antes"),
        ("debe", "deben", "hay que", "falta", "todavía no", "aún no", "tiene que"),
    ),
    "pt": (
        (
            "exceto",
            "salvo",
            "se",
            "uma vez",
            "mas",
            "porém",
            "contudo",
            "desde que",
            "quando",
            "depois",
        ),
        (
            "desde que",
            "contanto que",
            "com a condição",
            "sob a condição",
            "somente se",
            "apenas se",
            "sujeito a",
            "a menos que",
        ),
        ("se", "quando", "uma vez", "depois", "antes"),
        ("deve", "devem", "precisa", "precisam", "falta", "ainda não", "tem que"),
    ),
    "it": (
        (
            "tranne",
            "salvo",
            "se",
            "una volta",
            "ma",
            "però",
            "tuttavia",
            "purché",
            "quando",
            "dopo",
        ),
        (
            "purché",
            "a condizione che",
            "a patto che",
            "solo se",
            "soltanto se",
            "subordinato a",
            "a meno che",
        ),
        ("se", "quando", "una volta", "dopo", "prima"),
        ("deve", "devono", "bisogna", "occorre", "manca", "non ancora"),
    ),
    "nl": (
        ("behalve", "als", "zodra", "mits", "maar", "echter", "wanneer", "nadat", "tenzij"),
        ("mits", "op voorwaarde", "alleen als", "tenzij", "zolang"),
        ("als", "zodra", "wanneer", "nadat", "voordat"),
        ("moet", "moeten", "nog niet"),
    ),
    "ru": (
        (
            "кроме",
            "если",
            "только если",
            "но",
            "однако",
            "после",
            "когда",
            "как только",
            "при условии",
            "пока",
        ),
        ("при условии", "только если", "только при", "с условием", "если только", "до тех пор"),
        ("если", "когда", "после", "как только", "перед"),
        ("должен", "должна", "должно", "должны", "нужно", "надо", "необходимо", "ещё не", "еще не"),
    ),
    "ko": (
        ("단", "다만", "하지만", "그러나", "만약", "조건"),
        ("조건으로", "조건부", "조건하에", "전제로", "경우에만", "한해서", "한하여"),
        ("면", "후에", "후", "때", "전에"),
        ("해야", "필요", "아직"),
    ),
    "ja": (
        ("ただし", "但し", "もし", "しかし", "条件"),
        ("条件として", "条件付き", "を条件に", "場合に限り", "限り", "次第"),
        ("たら", "れば", "場合", "後", "とき", "前に"),
        ("必要", "してください", "まだ", "なければ"),
    ),
    "zh": (
        ("但", "但是", "不过", "如果", "除非", "只要", "条件"),
        ("前提是", "条件是", "只要", "除非", "仅当", "只有在", "的前提下"),
        ("如果", "后", "以后", "之后", "时"),
        ("需要", "必须", "还要", "还需", "请先", "尚未"),
    ),
}


def _is_spaced(form: str, *, opening: bool) -> bool:
    # Latin and Cyrillic words stand between spaces; kana and Han forms do not. Korean words do,
    # but its conditions inside a clause are endings (`지나면`, `추가해야`): only a Korean form
    # that opens the clause (`단, …`) is a whole word.
    limit = 0xD7B0 if opening else 0x1100
    return all(ord(ch) < limit and not 0x3000 <= ord(ch) < 0xAC00 for ch in form)


def _pattern(forms: set[str], *, opening: bool) -> re.Pattern[str]:
    spaced = sorted((f for f in forms if _is_spaced(f, opening=opening)), key=len, reverse=True)
    unspaced = sorted(
        (f for f in forms if not _is_spaced(f, opening=opening)), key=len, reverse=True
    )
    words = "|".join(re.escape(f.strip()).replace(r"\ ", r"\s+") for f in spaced)
    glued = "|".join(re.escape(f) for f in unspaced)
    # Whole words: no letter or digit may touch a spaced form ("once" is not in "oncet").
    alternatives = [f"(?<!\\w)(?:{words})(?!\\w)"] if words else []
    alternatives += [f"(?:{glued})"] if glued else []
    lead = r"^[\W_]*" if opening else ""
    return re.compile(lead + "(?:" + "|".join(alternatives) + ")", re.IGNORECASE)


def _collect(kind: int) -> set[str]:
    return {form for forms in _FORMS.values() for form in forms[kind]}


_OPENS = _pattern(_collect(0) | _collect(1), opening=True)
_ANYWHERE = _pattern(_collect(1), opening=False)
_EITHER = _pattern(_collect(2), opening=False)
_TO_DO = _pattern(_collect(3), opening=False)
_EVERY_FORM = {form.strip() for kind in range(4) for form in _collect(kind)}


def opens_with_condition(clause: str) -> bool:
    """Whether `clause` opens with a condition form ("once CI passes", "단, …")."""
    return _OPENS.match(clause) is not None


def condition_of(clause: str, *, next_line: bool = False) -> Condition | None:
    """What the clause attached to an approval makes of it: "conditional", "uncertain", or None
    (an approval, its clause at most an explanation); `next_line` for the line after the marker
    line (rules 1 and 2 only). See the module's docstring for the rule."""
    if _OPENS.match(clause) or _ANYWHERE.search(clause):
        return "conditional"
    if next_line:
        return None
    if _TO_DO.search(clause):
        return "conditional" if _EITHER.search(clause) else "uncertain"
    return None


def is_condition_form(word: str) -> bool:
    """Whether `word` is one of the table's forms, of any kind (tests draw prose without them)."""
    return word.lower() in _EVERY_FORM
