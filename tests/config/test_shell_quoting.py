"""Values in string commands: quoted for where they sit, or refused where no quoting is safe."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysched.config import parse_config
from pysched.config.shell_quoting import Spot, is_plain, quote_for, spots
from pysched.config.templates import Template, TemplateSyntaxError
from pysched.errors import ConfigError
from tests.config.test_templates import CTX

NASTY = "p$(touch PWNED)w`touch PWNED2`d'\"\\ \n;x|y&z *"


SHELLS = [("/bin/sh", "-c"), ("bash", "-c"), ("bash", "--posix", "-c")]


def run_sh(template: Template, value: str, cwd: Path, shell: tuple[str, ...] = SHELLS[0]) -> str:
    """Run ``template`` with ``value`` for ${X} as an attempt would: its text under the shell,
    with the environment it refers to."""
    text, values = template.render_shell(CTX, {"X": value})
    return run_text(text, cwd, values, shell)


def run_text(
    text: str, cwd: Path, values: dict[str, str] | None = None, shell: tuple[str, ...] = SHELLS[0]
) -> str:
    """What ``text`` prints under ``shell``, with ``values`` added to the environment."""
    done = subprocess.run(
        [*shell, text], cwd=cwd, env={**os.environ, **(values or {})}, capture_output=True
    )
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
    ('printf %s "$(printf %s "${X}")"', "{V}"),
]
# Here-documents with an unquoted delimiter: a reference expands there, exactly (the text on
# its own cannot hold a value with a newline: a line of it could end the document)
HEREDOC_SPOTS = [
    ("cat <<EOF\nsay ${X}\nEOF", "say {V}\n"),
    ("cat <<-EOF\n\t'${X}' \"${X}\"\n\tEOF\nprintf %s ${X}", "'{V}' \"{V}\"\n{V}"),
]


@pytest.mark.parametrize(("command", "printed"), SAFE_SPOTS)
def test_a_value_reaches_the_program_exactly_and_runs_nothing(
    command: str, printed: str, tmp_path: Path
) -> None:
    template = Template.parse(command)
    assert template.shell_problem() is None
    out = run_sh(template, NASTY, tmp_path)
    assert out == printed.replace("{V}", NASTY)
    assert list(tmp_path.iterdir()) == []  # neither $(...) nor the backquotes ran


@pytest.mark.parametrize(("command", "printed"), SAFE_SPOTS)
def test_a_text_on_its_own_quotes_each_value_for_its_spot(
    command: str, printed: str, tmp_path: Path
) -> None:
    """``render(shell=True)`` (and ``Command.render``) give a whole command with no
    environment: each value is quoted into the text for where it sits."""
    text = Template.parse(command).render(CTX, {"X": NASTY}, shell=True)
    assert run_text(text, tmp_path) == printed.replace("{V}", NASTY)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("command", "printed"), HEREDOC_SPOTS)
def test_a_value_in_a_here_document_arrives_exactly(
    command: str, printed: str, tmp_path: Path
) -> None:
    template = Template.parse(command)
    assert template.shell_problem() is None
    assert run_sh(template, NASTY, tmp_path) == printed.replace("{V}", NASTY)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TemplateSyntaxError, match="newline"):
        template.render(CTX, {"X": NASTY}, shell=True)
    one_line = NASTY.replace("\n", " ")
    text = template.render(CTX, {"X": one_line}, shell=True)
    assert run_text(text, tmp_path) == printed.replace("{V}", one_line)
    assert list(tmp_path.iterdir()) == []


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
    expected = printed.replace("{V}", value)
    if '"${X}")' in command:  # the value inside $(...): the shell drops trailing newlines
        expected = expected.rstrip("\n")
    assert run_sh(Template.parse(command), value, where) == expected
    assert list(where.iterdir()) == []


# bash reads some words twice (arithmetic, >&): a value that a command hands to such a spot
# is the command's own risk (docs/templates.md), but a value pysched writes into the command
# text never is: whatever the shell and the spot, it is not parsed
BASH_TRAPS = [
    # spots where the reader of quotes is fooled (a second pair of eyes found each of these
    # running the value when values were quoted into the text): the value may arrive split,
    # but never runs
    'printf %s "$( (cd / && true) | cat; printf %s "${X}" )"',
    'printf %s "${{U:-"${X}"}}"',
    'printf %s "$(printf %s ${{x:-)}} "${X}")"',
    "printf %s ${{x:- #}}'\n'${X}' '",
    "printf %s load \\\n#--user ${X}\n",
    'printf %s "$\\\n(printf %s "${X}")"',
    "cat <<EOF\nfoo\\\nEOF\nprintf %s ${X}\nEOF\n",
    "cat <<'E\\F'\nEF\nprintf %s '\nE\\F\nprintf %s ${X}",
    "echo hi >&/tmp/x.${X}.log",
    'grep -q ice <<<"${X}"',
    "grep -q ice <<<'${X}'",
    "echo $'${X}' '${X}'",
    "cat <<$'EOF'\n$EOF\necho '\nEOF\necho ${X}\n",
    'cat <<"END;"\nEND\necho \'\nEND;\necho ${X}\n',
    # a second review's: bash reading a word twice (arithmetic, subscripts, after >&)
    "echo hi >&$((1))${X}",
    "while (( ${X} > 1 )); do break; done",
    "for (( i=0; i<${X}; i++ )); do :; done",
    "if let n=${X}; then :; fi",
    "cat <<<x\n(( 0 *\nx\n+ ${X} ))",
    "[[ a == ]]x || ${X} -eq 1 ]]",
    "a[${X}]=1",
    "declare -a a; a+=([${X}]=1)",
    "time (( ${X} ))",
]


@pytest.mark.parametrize("shell", SHELLS, ids=["sh", "bash", "bash_posix"])
@pytest.mark.parametrize("command", BASH_TRAPS)
def test_no_shell_runs_a_value_written_into_any_command(
    command: str, shell: tuple[str, ...], tmp_path: Path
) -> None:
    template = Template.parse(command)
    if template.shell_problem() is not None:
        return  # refused when the config loads
    for value in (
        "$(touch PWNED)",
        "x$(touch PWNED)",
        "'; touch PWNED; '",
        "$(touch PWNED)\\",
        "a[$(touch PWNED)]",
    ):
        run_sh(template, value, tmp_path, shell)
        assert list(tmp_path.iterdir()) == [], (command, value)


def test_plain_values_are_written_in_place_the_others_referred_to() -> None:
    template = Template.parse("load --date {run_date} --job '{job}' --pw \"${PW}\" ${PW}")
    text, values = template.render_shell(CTX, {"PW": "it's; secret"})
    assert text == (
        'load --date 2026-10-19 --job \'ice\' --pw "${PYSCHED_VALUE_3}" "${PYSCHED_VALUE_4}"'
    )
    assert values == {"PYSCHED_VALUE_3": "it's; secret", "PYSCHED_VALUE_4": "it's; secret"}
    assert is_plain("2026-10-19T09:03:00+00:00") and not is_plain("A=b") and not is_plain("")


@pytest.mark.parametrize(
    ("command", "where"),
    [
        ("echo `cat ${X}`", "in a backquoted substitution"),
        ("echo $((${X} + 1))", "in a $((...)) expression"),
        (
            "cat <<'EOF'\n${X}\nEOF",
            "in a here-document with a quoted delimiter (it expands nothing)",
        ),
        (
            'cat <<-"EOF"\n\tsome ${X}\n\tEOF',
            "in a here-document with a quoted delimiter (it expands nothing)",
        ),
        ("(( $(echo ${X}) ))", "in a ((...)) arithmetic command (bash reads its words as code)"),
        ("cat <<${X}", "as a here-document's delimiter"),
        ("echo hi # note ${X}", "in a comment"),
        ("echo \\${X}", "right after a backslash"),
        ('echo "\\${X}"', "right after a backslash"),
        ("echo $(case a in a) echo;; esac) ${X}", "after a 'case' inside a substitution"),
        ("echo hi >&/tmp/x.${X}.log", "in the word after >& (bash expands it twice)"),
        ('echo hi >& "${X}"', "in the word after >& (bash expands it twice)"),
        ('echo "${{U:-${X}}}"', "in a ${...} expansion"),
        ("x=(1 2); echo ${{x[${X}]}}", "in an array subscript (bash reads it as arithmetic)"),
        ("a=([${X}]=1)", "in an array subscript (bash reads it as arithmetic)"),
        ("declare a[${X}]=1", "in an array subscript (bash reads it as arithmetic)"),
        (
            "if (( ${X} > 1 )); then :; fi",
            "in a ((...)) arithmetic command (bash reads its words as code)",
        ),
        (
            "f() {{ [[\t${X} -eq 1 ]]; }}",
            "in a [[...]] test (bash reads some of its words as arithmetic)",
        ),
        ("command let n=${X}", "in a let command (its words are arithmetic)"),
        ("echo $[ ${X} + 1 ]", "in a $[...] expression"),
        ("echo hi >&$(dirname /tmp)/o.${X}.log", "in the word after >& (bash expands it twice)"),
        ("echo hi >\\\n&/tmp/o.${X}", "in the word after >& (bash expands it twice)"),
        ("l\\\net n=${X}", "in a let command (its words are arithmetic)"),
        (
            "(( ${X} > 1 )) && echo big",
            "in a ((...)) arithmetic command (bash reads its words as code)",
        ),
        ("[[ ${X} -eq 1 ]]", "in a [[...]] test (bash reads some of its words as arithmetic)"),
        ("true; let n=${X}", "in a let command (its words are arithmetic)"),
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


def test_placeholders_without_a_format_go_anywhere(tmp_path: Path) -> None:
    """Their values are always plain (dates, job names, run ids, numbers, ISO instants), so
    they are written in place wherever they sit, and read as written."""
    command = (
        "cat <<EOF\n{run_date} {job}\nEOF\n"
        "printf '%s|' $(printf %s {run_id}) $(( {attempt} + 1 )) # {scheduled_for}\n"
        "[[ {attempt} -eq 2 ]] 2>/dev/null; printf %s \\{job}"
    )
    template = Template.parse(command)
    assert template.shell_problem() is None
    out = run_text(template.render_shell(CTX, {})[0], tmp_path)
    assert out == "2026-10-19 ice\nice.2026-10-19.1|3|ice"


def test_the_fix_names_the_variable_pysched_already_sets() -> None:
    formatted = Template.parse("echo hi # {run_date:%d %b}").shell_problem()
    assert formatted is not None
    assert 'set env: {RUN_DATE: "{run_date:%d %b}"} and write "$RUN_DATE" there' in str(formatted)
    # a format that can only give plain text is plain: it goes anywhere
    assert (
        Template.parse("echo hi # {run_date:%Y%m%d} {scheduled_for:%FT%H:%M}").shell_problem()
        is None
    )


def test_a_here_document_ends_at_its_delimiter_line() -> None:
    assert spots(["cat <<A <<-B\nx\nA\n\ty\n\tB\necho ", ""]) == [Spot.BARE]
    assert spots(["cat <<'A'\nA2\nA\necho \"", '"']) == [Spot.DOUBLE]
    assert spots(["cat <<A\nnot the end: A \necho ", ""]) == [Spot.HEREDOC]


def test_quote_for_each_spot() -> None:
    assert quote_for("a b", Spot.BARE) == "'a b'"
    assert quote_for('a"$`\\b', Spot.DOUBLE) == 'a\\"\\$\\`\\\\b'
    assert quote_for("it's", Spot.SINGLE) == "it'\"'\"'s"
    # a value that would lengthen the variable before it ($x then abc is not $xabc)
    assert quote_for("abc", Spot.BARE, after_name=True) == "''abc"
    assert quote_for("abc", Spot.DOUBLE, after_name=True) == '""abc'
    assert quote_for("-abc", Spot.DOUBLE, after_name=True) == "-abc"


def test_the_config_refuses_such_a_command_naming_the_place(tmp_path: Path) -> None:
    text = 'jobs:\n  load:\n    schedule: "0 2 * * *"\n    command: "echo $((${PW} + 1))"\n'
    with pytest.raises(ConfigError) as caught:
        parse_config(text, tmp_path / "pysched.yaml", {"PW": "x"})
    message = str(caught.value)
    assert "pysched.yaml:4:" in message
    assert "command: ${PW} sits in a $((...)) expression" in message


def test_display_quotes_as_the_command_runs() -> None:
    template = Template.parse("""psql -c "select '{job}'" --password "${PW}" {run_id}""")
    assert template.render_masked(CTX, shell=True) == (
        """psql -c "select 'ice'" --password "***" ice.2026-10-19.1"""
    )
