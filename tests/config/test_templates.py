from __future__ import annotations

import os
import subprocess
import tempfile
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysched.config import templates
from pysched.config.secrets import Secrets
from pysched.config.templates import (
    PLACEHOLDERS,
    MissingSecretError,
    RunContext,
    Template,
    TemplateSyntaxError,
)
from pysched.errors import PyschedError, TemplateError

CTX = RunContext(
    job="ice",
    run_id="ice.2026-10-19.1",
    run_date=date(2026, 10, 19),
    attempt=2,
    scheduled_for=datetime(2026, 10, 19, 9, 3, 7, tzinfo=UTC),
)
SECRETS = {"DB_PASSWORD": "hunter2!", "TOKEN": "t0k3n"}


def test_public_names():
    assert set(templates.__all__) == {
        "PLACEHOLDERS",
        "MissingSecretError",
        "RunContext",
        "SecretSource",
        "Template",
        "TemplateSyntaxError",
    }
    assert {"run_date", "job", "run_id", "attempt", "scheduled_for"} == PLACEHOLDERS


# --- rendering ------------------------------------------------------------------------------

RENDERS = [
    pytest.param("{job}", "ice", id="job"),
    pytest.param("{run_id}", "ice.2026-10-19.1", id="run_id"),
    pytest.param("{attempt}", "2", id="attempt"),
    pytest.param("{run_date}", "2026-10-19", id="run_date_iso"),
    pytest.param("{run_date:%Y%m%d}", "20261019", id="run_date_format"),
    pytest.param("{run_date:%d/%m/%y %j}", "19/10/26 292", id="run_date_format_mixed"),
    pytest.param("{run_date:%-d.%-m.}", "19.10.", id="run_date_no_padding"),
    pytest.param("{run_date:%H%M}", "0000", id="run_date_has_no_time"),
    pytest.param("{scheduled_for}", "2026-10-19T09:03:07+00:00", id="scheduled_for_iso"),
    pytest.param("{scheduled_for:%H%M}", "0903", id="scheduled_for_format"),
    pytest.param("{scheduled_for:%Y-%m-%dT%H:%M:%S%z}", "2026-10-19T09:03:07+0000", id="full"),
    pytest.param("{scheduled_for:100%%}", "100%", id="percent_percent"),
    pytest.param("{{job}}", "{job}", id="literal_braces"),
    pytest.param("{{{job}}}", "{ice}", id="literal_braces_around_placeholder"),
    pytest.param("}}{{", "}{", id="literal_braces_reversed"),
    pytest.param("awk '{{print $1}}'", "awk '{print $1}'", id="awk"),
    pytest.param("$HOME $1 $$ a$ $", "$HOME $1 $$ a$ $", id="lone_dollars"),
    pytest.param("$${HOME}/x", "${HOME}/x", id="dollar_dollar_brace"),
    pytest.param("$${X:-{job}", "${X:-{job}", id="dollar_dollar_brace_verbatim"),
    pytest.param("${{job}}", "${job}", id="dollar_then_literal_brace"),
    pytest.param("$${{job}}", "$${job}", id="dollar_dollar_then_literal_brace"),
    pytest.param("${DB_PASSWORD}", "hunter2!", id="secret"),
    pytest.param("a${TOKEN}b${TOKEN}", "at0k3nbt0k3n", id="secret_twice"),
    pytest.param("{job}:{attempt}", "ice:2", id="colon_outside_placeholder"),
    pytest.param("", "", id="empty"),
    pytest.param("plain text, no templates", "plain text, no templates", id="plain"),
    pytest.param("{job}\n{run_date}", "ice\n2026-10-19", id="newline"),
]


@pytest.mark.parametrize(("text", "expected"), RENDERS)
def test_render(text: str, expected: str):
    assert Template.parse(text).render(CTX, SECRETS) == expected


def test_scheduled_for_renders_in_its_own_zone():
    zone = timezone(timedelta(hours=2))
    ctx = RunContext(
        job="j",
        run_id="j.2026-10-19.1",
        run_date=date(2026, 10, 19),
        attempt=1,
        scheduled_for=datetime(2026, 10, 19, 11, 3, tzinfo=zone),
    )
    template = Template.parse("{scheduled_for} {scheduled_for:%H%M}")
    assert template.render(ctx, {}) == "2026-10-19T11:03:00+02:00 1103"


def test_render_shell_writes_plain_values_and_refers_to_the_others():
    ctx = RunContext(
        job="a b",
        run_id="x.2026-10-19.1",
        run_date=date(2026, 10, 19),
        attempt=1,
        scheduled_for=datetime(2026, 10, 19, tzinfo=UTC),
    )
    template = Template.parse("load --date={run_date} --job={job} --pw=${P} | tee {run_id}.log")
    assert template.render_shell(ctx, {"P": "it's"}) == (
        'load --date=2026-10-19 --job="${PYSCHED_VALUE_2}" --pw="${PYSCHED_VALUE_3}" '
        "| tee x.2026-10-19.1.log",
        {"PYSCHED_VALUE_2": "a b", "PYSCHED_VALUE_3": "it's"},
    )
    assert template.render(ctx, {"P": "it's"}) == (
        "load --date=2026-10-19 --job=a b --pw=it's | tee x.2026-10-19.1.log"
    )


def test_render_accepts_secrets_object():
    secrets = Secrets({"DB_PASSWORD": "from-file"}, {"TOKEN": "from-env"})
    template = Template.parse("${DB_PASSWORD} ${TOKEN}")
    assert template.render(CTX, secrets) == "from-file from-env"


def test_secret_names():
    template = Template.parse("${A} ${B} ${A} $${C} ${{D}} {job} $E")
    assert template.secret_names == frozenset({"A", "B"})
    assert Template.parse("{job}").secret_names == frozenset()


def test_missing_secret():
    template = Template.parse("run --pw ${DB_PASSWORD} --other ${NOPE}")
    with pytest.raises(MissingSecretError) as info:
        template.render(CTX, {"DB_PASSWORD": "x"})
    error = info.value
    assert (error.name, error.offset) == ("NOPE", 32)
    assert str(error) == "no value for ${NOPE} — set NOPE in the environment or the secrets file"
    assert isinstance(error, TemplateError)
    assert isinstance(error, LookupError)
    assert isinstance(error, PyschedError)


def test_empty_secret_value_is_a_value():
    assert Template.parse("[${E}]").render(CTX, {"E": ""}) == "[]"
    assert Template.parse("[${E}]").render_shell(CTX, {"E": ""}) == (
        '["${PYSCHED_VALUE_1}"]',
        {"PYSCHED_VALUE_1": ""},
    )


# --- masking --------------------------------------------------------------------------------


def test_render_masked_with_context():
    template = Template.parse("psql -U etl -W ${DB_PASSWORD} --date {run_date:%Y%m%d} {{x}}")
    assert template.render_masked(CTX) == "psql -U etl -W *** --date 20261019 {x}"


def test_render_masked_without_context_shows_the_definition():
    text = "psql -W ${DB_PASSWORD} {run_date:%Y%m%d} {{x}} $${HOME} ${{y}} {job}"
    template = Template.parse(text)
    assert template.render_masked(None) == (
        "psql -W *** {run_date:%Y%m%d} {{x}} $${HOME} ${{y}} {job}"
    )
    assert template.render_masked(None, shell=True) == template.render_masked(None)


def test_render_masked_shell_quotes_placeholders_not_the_mask():
    ctx = RunContext(
        job="a b",
        run_id="r",
        run_date=date(2026, 1, 1),
        attempt=1,
        scheduled_for=datetime(2026, 1, 1, tzinfo=UTC),
    )
    template = Template.parse("run {job} ${S}")
    assert template.render_masked(ctx, shell=True) == "run 'a b' ***"
    assert template.render_masked(ctx) == "run a b ***"


@given(value=st.text(min_size=1))
def test_render_masked_never_shows_a_secret(value: str):
    template = Template.parse("x ${S} {job} ${S}")
    assert template.render_masked(CTX) == "x *** ice ***"
    assert template.render_masked(None) == "x *** {job} ***"
    assert value in template.render(CTX, {"S": value})


# --- errors ---------------------------------------------------------------------------------

ERRORS = [
    pytest.param(
        "run {rundate}", 4, "unknown placeholder {rundate} — did you mean {run_date}?", id="typo"
    ),
    pytest.param(
        "{RUN_DATE:%Y}",
        0,
        "unknown placeholder {RUN_DATE:%Y} — did you mean {run_date}?",
        id="case",
    ),
    pytest.param("{ job }", 0, "unknown placeholder { job } — did you mean {job}?", id="spaces"),
    pytest.param(
        "{DB_PASSWORD}",
        0,
        "unknown placeholder {DB_PASSWORD} — did you mean ${DB_PASSWORD}, a value from the "
        "environment or the secrets file?",
        id="env_like",
    ),
    pytest.param(
        "x {banana}",
        2,
        "unknown placeholder {banana} — the placeholders are {attempt}, {job}, {run_date}, "
        "{run_id}, {scheduled_for}; write '{{' and '}}' for literal braces",
        id="unknown",
    ),
    pytest.param(
        "{}",
        0,
        "empty placeholder {} — use one of {attempt}, {job}, {run_date}, {run_id}, "
        "{scheduled_for}, or write '{{' and '}}' for literal braces",
        id="empty",
    ),
    pytest.param(
        "{job:%Y}",
        4,
        "placeholder {job} takes no format (found {job:%Y}); only {run_date} and "
        "{scheduled_for} take a strftime format",
        id="format_on_job",
    ),
    pytest.param(
        "{attempt:02d}",
        8,
        "placeholder {attempt} takes no format (found {attempt:02d}); only {run_date} and "
        "{scheduled_for} take a strftime format",
        id="format_on_attempt",
    ),
    pytest.param(
        "{run_date:}",
        9,
        "empty format in {run_date:} — drop the ':' or give a strftime format such as %Y%m%d",
        id="empty_format",
    ),
    pytest.param(
        "{run_date:%Y-%Q}",
        13,
        "unknown strftime directive %Q in {run_date:%Y-%Q} — see the strftime table in "
        "docs/templates.md",
        id="bad_directive",
    ),
    pytest.param(
        "{scheduled_for:%s}",
        15,
        "unknown strftime directive %s in {scheduled_for:%s} — see the strftime table in "
        "docs/templates.md",
        id="epoch_directive_refused",
    ),
    pytest.param(
        "{run_date:%-%}",
        10,
        "unknown strftime directive %-% in {run_date:%-%} — see the strftime table in "
        "docs/templates.md",
        id="flag_on_percent",
    ),
    pytest.param(
        "{run_date:%Y%}",
        12,
        "format in {run_date:%Y%} ends with a lone '%' — write '%%' for a literal '%'",
        id="lone_percent",
    ),
    pytest.param(
        "{run_date:%Y\ud800}",
        10,
        "strftime cannot use the format in {run_date:%Y\\ud800}",
        id="unencodable_format",
    ),
    pytest.param(
        "echo {job",
        5,
        "unmatched '{' — close the placeholder with '}', or write '{{' for a literal '{'",
        id="unclosed_brace",
    ),
    pytest.param(
        "a {b {job}",
        2,
        "unmatched '{' — close the placeholder with '}', or write '{{' for a literal '{'",
        id="brace_inside_placeholder",
    ),
    pytest.param("a } b", 2, "unmatched '}' — write '}}' for a literal '}'", id="lone_close"),
    pytest.param("{job}}", 5, "unmatched '}' — write '}}' for a literal '}'", id="extra_close"),
    pytest.param(
        "x ${",
        2,
        "unclosed '${' — write ${NAME}, or '$${' to pass a literal '${' on",
        id="unclosed_secret",
    ),
    pytest.param(
        "x ${PW",
        2,
        "unclosed '${' — write ${NAME}, or '$${' to pass a literal '${' on",
        id="unclosed_secret_name",
    ),
    pytest.param("${}", 0, "empty name in '${}' — write ${NAME}", id="empty_secret"),
    pytest.param(
        "${1PW}",
        0,
        "bad name in ${1PW} — a name is letters, digits and _, not starting with a digit; for "
        "a shell expansion such as ${X:-y} write $${X:-y}",
        id="secret_starts_with_digit",
    ),
    pytest.param(
        "${HOME:-/tmp}",
        0,
        "bad name in ${HOME:-/tmp} — a name is letters, digits and _, not starting with a "
        "digit; for a shell expansion such as ${X:-y} write $${X:-y}",
        id="shell_expansion",
    ),
    pytest.param(
        "echo $${HOME",
        5,
        "unclosed '$${' — a literal '${' runs to the next '}', and there is none",
        id="unclosed_escape",
    ),
    pytest.param("ab\x00cd", 2, "NUL character in template", id="nul"),
    pytest.param(
        "{job\x00}",
        0,
        "unmatched '{' — close the placeholder with '}', or write '{{' for a literal '{'",
        id="nul_in_placeholder",
    ),
]


@pytest.mark.parametrize(("text", "offset", "message"), ERRORS)
def test_errors(text: str, offset: int, message: str):
    with pytest.raises(TemplateSyntaxError) as info:
        Template.parse(text)
    assert (info.value.offset, str(info.value)) == (offset, message)


def test_error_is_a_template_error_and_value_error():
    with pytest.raises(TemplateError):
        Template.parse("{nope}")
    with pytest.raises(ValueError):
        Template(text="{nope}")  # the constructor parses too


def test_error_messages_stay_short_and_on_one_line():
    with pytest.raises(TemplateSyntaxError) as info:
        Template.parse("{" + "x\n" * 100 + "}")
    assert "\n" not in str(info.value)
    assert len(str(info.value)) < 300


# --- the value ------------------------------------------------------------------------------


def test_template_is_a_frozen_hashable_value():
    a, b = Template.parse("run {job}"), Template(text="run {job}")
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, Template.parse("other")}) == 2
    assert repr(a) == "Template(text='run {job}')"
    with pytest.raises(AttributeError):
        a.text = "x"  # type: ignore[misc]


def test_run_context_rules():
    good = {
        "job": "j",
        "run_id": "j.2026-01-01.1",
        "run_date": date(2026, 1, 1),
        "attempt": 1,
        "scheduled_for": datetime(2026, 1, 1, tzinfo=UTC),
    }
    RunContext(**good)
    with pytest.raises(ValueError, match="timezone-aware"):
        RunContext(**{**good, "scheduled_for": datetime(2026, 1, 1)})
    with pytest.raises(TypeError, match="not a datetime"):
        RunContext(**{**good, "run_date": datetime(2026, 1, 1, tzinfo=UTC)})
    with pytest.raises(ValueError, match="counts from 1"):
        RunContext(**{**good, "attempt": 0})


# --- properties -----------------------------------------------------------------------------

FRAGMENTS = st.sampled_from(
    [
        "{job}",
        "{run_id}",
        "{attempt}",
        "{run_date}",
        "{run_date:%Y%m%d}",
        "{scheduled_for:%H:%M}",
        "{",
        "}",
        "{{",
        "}}",
        "$",
        "$$",
        "${S}",
        "${",
        "$${X}",
        ":",
        "%",
        "job",
        "run_date",
        " ",
        "\n",
        "\x00",
        "_1",
    ]
)
TEXTS = st.one_of(st.text(), st.lists(FRAGMENTS | st.text(max_size=3)).map("".join))


@given(text=TEXTS)
def test_any_text_parses_or_raises_template_error(text: str):
    try:
        template = Template.parse(text)
    except TemplateSyntaxError as error:
        assert 0 <= error.offset < len(text)
        assert str(error)
        return
    secrets = {name: "v" for name in template.secret_names}
    assert isinstance(template.render(CTX, secrets), str)
    if template.shell_problem() is None:  # else no string command may be this text
        assert isinstance(template.render(CTX, secrets, shell=True), str)
        assert isinstance(template.render_shell(CTX, secrets)[0], str)
    else:
        with pytest.raises(TemplateSyntaxError):
            template.render(CTX, secrets, shell=True)
    assert isinstance(template.render_masked(CTX, shell=True), str)
    assert isinstance(template.render_masked(None), str)


@given(text=st.text(st.characters(blacklist_characters="\x00")))
def test_doubled_braces_are_always_literal(text: str):
    escaped = text.replace("{", "{{").replace("}", "}}")
    template = Template.parse(escaped)
    assert template.render(CTX, {}) == text
    assert template.render_masked(None) == escaped
    assert template.secret_names == frozenset()


# --- the injection test ---------------------------------------------------------------------
#
# String commands run as `/bin/sh -c <rendered>`. Every value a template substitutes, whether a
# placeholder or a ${SECRET}, must reach the program as one literal argument, whatever it holds.

PAYLOADS = [
    pytest.param("two words", id="space"),
    pytest.param("it's", id="single_quote"),
    pytest.param('say "hi"', id="double_quote"),
    pytest.param("x; touch pwned", id="semicolon"),
    pytest.param("x && touch pwned", id="and_and"),
    pytest.param("x || touch pwned", id="or_or"),
    pytest.param("x | touch pwned", id="pipe"),
    pytest.param("`touch pwned`", id="backticks"),
    pytest.param("$(touch pwned)", id="command_substitution"),
    pytest.param("x\ntouch pwned\n", id="newline"),
    pytest.param("'; touch pwned; '", id="break_out_of_single_quotes"),
    pytest.param('"; touch pwned; "', id="break_out_of_double_quotes"),
    pytest.param("x > pwned", id="redirect"),
    pytest.param("x & touch pwned", id="background"),
    pytest.param("$HOME ${HOME} $((1+1))", id="expansions"),
    pytest.param("* ? [a]", id="globs"),
    pytest.param("\\ \\n \\\\", id="backslashes"),
    pytest.param("-n", id="dash"),
    pytest.param("", id="empty"),
    pytest.param("tab\there\rcr", id="control"),
    pytest.param("ünïcødé 🎉", id="unicode"),
]

INJECTION_TEMPLATE = (
    "printf '%s\\n' {job} {run_id} {run_date:%Y<P>} {scheduled_for:%H<P>} ${S} x{job}y"
)


def _run_shell(command: str, cwd: Path, values: dict[str, str] | None = None) -> bytes:
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        capture_output=True,
        check=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(values or {})},
        timeout=30,
    )
    return done.stdout


def _check_injection(payload: str, workdir: Path) -> None:
    ctx = RunContext(
        job=payload,
        run_id=payload,
        run_date=date(2026, 10, 19),
        attempt=1,
        scheduled_for=datetime(2026, 10, 19, 9, 3, tzinfo=UTC),
    )
    # The payload also rides in through strftime formats, which copy text they don't know
    # (a format cannot hold braces, so those become parentheses there).
    in_format = payload.replace("{", "(").replace("}", ")")
    template = Template.parse(INJECTION_TEMPLATE.replace("<P>", in_format.replace("%", "%%")))
    command, env = template.render_shell(ctx, {"S": payload})
    values = [payload, payload, "2026" + in_format, "09" + in_format, payload, f"x{payload}y"]
    expected = "".join(value + "\n" for value in values)
    assert _run_shell(command, workdir, env).decode("utf-8") == expected
    assert list(workdir.iterdir()) == []  # no `pwned` or anything else was created


def test_injection_payloads_are_live(tmp_path: Path):
    # The control: pasted raw, the payloads do run, so the test below would see a breach.
    _run_shell("printf '%s\\n' x; touch pwned", tmp_path)
    assert (tmp_path / "pwned").exists()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_injection(payload: str, tmp_path: Path):
    _check_injection(payload, tmp_path)


SHELL_TEXT = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30),
    st.lists(st.sampled_from(["'", '"', ";", "`", "$(", ")", "\n", "\\", "&", "|", " ", "x"])).map(
        "".join
    ),
)


@settings(max_examples=50, deadline=None)
@given(payload=SHELL_TEXT)
def test_injection_random_values(payload: str):
    with tempfile.TemporaryDirectory() as workdir:
        _check_injection(payload, Path(workdir))
