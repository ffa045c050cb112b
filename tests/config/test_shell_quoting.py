"""Values in string commands: quoted for where they sit, or refused where no quoting is safe."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysched.config import parse_config
from pysched.config.shell_quoting import Spot, UnsafeSpot, quote_for, spots
from pysched.config.templates import Template, TemplateSyntaxError
from pysched.errors import ConfigError
from tests.config.test_templates import CTX

NASTY = "p$(touch PWNED)w`touch PWNED2`d'\"\\ \n;x|y&z *"


def run_sh(command: str, cwd: Path) -> str:
    done = subprocess.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True, check=True)
    return done.stdout.decode()  # as bytes: no newline translation


# Each: the command with ${X} where the value goes, and what printf prints given value V.
SAFE_SPOTS = [
    ("printf %s ${X}", "{V}"),
    ('printf %s "${X}"', "{V}"),
    ("printf %s '${X}'", "{V}"),
    ('printf %s "a ${X} b"', "a {V} b"),
    ("printf %s 'a ${X} b'", "a {V} b"),
    ("printf %s c${X}d", "c{V}d"),
    ("""printf %s "where d = '${X}'" """, "where d = '{V}'"),
    ("""printf %s 'say "${X}"' """, 'say "{V}"'),
    ('printf %s "$(printf %s q)${X}"', "q{V}"),
    ("x=$(printf ')'); printf %s \"$x${X}\"", "){V}"),
    ("cat <<EOF\nhere\nEOF\nprintf %s ${X}", "here\n{V}"),
    ("printf %s \"`printf %s q`\" '${X}'", "q{V}"),
    ("printf '%s-%s' ${X} \"${X}\"", "{V}-{V}"),
    ("printf %s $((1 + 2))${X}", "3{V}"),
    ("printf %s '#'${X} # a comment after", "#{V}"),
    ('x=a; printf %s "$x${X}" $x${X}', "a{V}a{V}"),
]


@pytest.mark.parametrize(("command", "printed"), SAFE_SPOTS)
def test_a_value_reaches_the_program_exactly_and_runs_nothing(
    command: str, printed: str, tmp_path: Path
) -> None:
    template = Template.parse(command)
    assert template.shell_problem() is None
    out = run_sh(template.render(CTX, {"X": NASTY}, shell=True), tmp_path)
    assert out == printed.replace("{V}", NASTY)
    assert list(tmp_path.iterdir()) == []  # neither $(...) nor the backquotes ran


@settings(max_examples=60, deadline=None)
@given(
    value=st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12),
    which=st.sampled_from(SAFE_SPOTS),
)
def test_any_value_round_trips_in_every_safe_spot(
    value: str, which: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    command, printed = which
    where = tmp_path_factory.mktemp("sh")
    rendered = Template.parse(command).render(CTX, {"X": value}, shell=True)
    assert run_sh(rendered, where) == printed.replace("{V}", value)
    assert list(where.iterdir()) == []


@pytest.mark.parametrize(
    ("command", "where"),
    [
        ("echo $(cat ${X})", "in a $(...) substitution"),
        ('echo "$(cat ${X})"', "in a $(...) substitution"),
        ("echo `cat ${X}`", "in a backquoted substitution"),
        ("echo $((${X} + 1))", "in a $((...)) expression"),
        ("cat <<EOF\n${X}\nEOF", "in a here-document"),
        ("cat <<-'EOF'\n\tsome ${X}\n\tEOF", "in a here-document"),
        ("cat <<${X}", "as a here-document's delimiter"),
        ("echo hi # note ${X}", "in a comment"),
        ("echo \\${X}", "right after a backslash"),
        ('echo "\\${X}"', "right after a backslash"),
        ("echo $(case a in a) echo;; esac) ${X}", "after a 'case' inside a substitution"),
    ],
)
def test_a_value_where_no_quoting_is_safe_is_refused(command: str, where: str) -> None:
    template = Template.parse(command)
    problem = template.shell_problem()
    assert problem is not None
    assert str(problem).startswith(f"${{X}} sits {where}, ")
    assert 'set env: {X: "${X}"} and write "$X" there' in str(problem)
    assert command[problem.offset :].startswith("${X}")
    with pytest.raises(TemplateSyntaxError):
        template.render(CTX, {"X": "v"}, shell=True)
    # the same text is fine where no shell reads it (a list item, an env value, a cwd)
    assert "v" in template.render(CTX, {"X": "v"})


def test_the_fix_names_the_variable_pysched_already_sets() -> None:
    problem = Template.parse("echo $(ls /data/{run_date})").shell_problem()
    assert problem is not None
    assert str(problem).startswith("{run_date} sits in a $(...) substitution, ")
    assert str(problem).endswith('write "$PYSCHED_RUN_DATE" there (pysched sets it)')
    formatted = Template.parse("cat <<EOF\n{run_date:%Y%m%d}\nEOF").shell_problem()
    assert formatted is not None
    assert 'set env: {RUN_DATE: "{run_date:%Y%m%d}"} and write "$RUN_DATE" there' in str(formatted)


def test_a_here_document_ends_at_its_delimiter_line() -> None:
    assert spots(["cat <<A <<-B\nx\nA\n\ty\n\tB\necho ", ""]) == [Spot.BARE]
    assert spots(["cat <<'A'\nA2\nA\necho \"", '"']) == [Spot.DOUBLE]
    assert spots(["cat <<A\nnot the end: A \necho ", ""]) == UnsafeSpot(0, "in a here-document")


def test_quote_for_each_spot() -> None:
    assert quote_for("a b", Spot.BARE) == "'a b'"
    assert quote_for('a"$`\\b', Spot.DOUBLE) == 'a\\"\\$\\`\\\\b'
    assert quote_for("it's", Spot.SINGLE) == "it'\"'\"'s"
    # a value that would lengthen the variable before it ($x then abc is not $xabc)
    assert quote_for("abc", Spot.BARE, after_name=True) == "''abc"
    assert quote_for("abc", Spot.DOUBLE, after_name=True) == '""abc'
    assert quote_for("-abc", Spot.DOUBLE, after_name=True) == "-abc"


def test_the_config_refuses_such_a_command_naming_the_place(tmp_path: Path) -> None:
    text = 'jobs:\n  load:\n    schedule: "0 2 * * *"\n    command: "echo $(ls /d/{run_date})"\n'
    with pytest.raises(ConfigError) as caught:
        parse_config(text, tmp_path / "pysched.yaml", {})
    message = str(caught.value)
    assert "pysched.yaml:4:" in message
    assert "command: {run_date} sits in a $(...) substitution" in message


def test_display_quotes_as_the_command_runs() -> None:
    template = Template.parse("""psql -c "select '{job}'" --password "${PW}" {run_id}""")
    assert template.render_masked(CTX, shell=True) == (
        """psql -c "select 'ice'" --password "***" ice.2026-10-19.1"""
    )
