from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysched.config import secrets as secrets_module
from pysched.config.secrets import MIN_MASK_LENGTH, Secrets, SecretsFile, load_secrets_file


def _write(tmp_path: Path, content: str | bytes, mode: int = 0o600) -> Path:
    path = tmp_path / "secrets.env"
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    os.chmod(path, mode)
    return path


def test_public_names():
    assert set(secrets_module.__all__) == {
        "MIN_MASK_LENGTH",
        "Secrets",
        "SecretsFile",
        "load_secrets_file",
    }


# --- the file -------------------------------------------------------------------------------


def test_file_format(tmp_path: Path):
    path = _write(
        tmp_path,
        "# a comment\n"
        "\n"
        "   # an indented comment\n"
        "PLAIN=value\n"
        "export EXPORTED=yes\n"
        "export\tTABBED=tab\n"
        "  SPACED  =   around equals   \n"
        "SINGLE='it has \"double\" and $NO ${EXPANSION} \\n'\n"
        'DOUBLE="it\'s $NOT ${EXPANDED} \\t"\n'
        "EMPTY=\n"
        "EMPTY_QUOTED=''\n"
        "HASH=p#ss # not a comment\n"
        "EQUALS=a=b=c\n"
        "export=a name called export\n"
        "QUOTED_SPACES = '  kept  '  \n"
        "CRLF=windows\r\n"
        "_UNDER_9=ok",
    )
    result = load_secrets_file(path)
    assert result.problems == ()
    assert result.warnings == ()
    assert dict(result.values) == {
        "PLAIN": "value",
        "EXPORTED": "yes",
        "TABBED": "tab",
        "SPACED": "around equals",
        "SINGLE": 'it has "double" and $NO ${EXPANSION} \\n',
        "DOUBLE": "it's $NOT ${EXPANDED} \\t",
        "EMPTY": "",
        "EMPTY_QUOTED": "",
        "HASH": "p#ss # not a comment",
        "EQUALS": "a=b=c",
        "export": "a name called export",
        "QUOTED_SPACES": "  kept  ",
        "CRLF": "windows",
        "_UNDER_9": "ok",
    }


def test_byte_order_mark_is_ignored(tmp_path: Path):
    result = load_secrets_file(_write(tmp_path, b"\xef\xbb\xbfA=1\n"))
    assert (dict(result.values), result.problems) == ({"A": "1"}, ())


BAD_LINES = [
    pytest.param("hunter2", 1, "expected NAME=VALUE", id="no_equals"),
    pytest.param("  hunter2", 3, "expected NAME=VALUE", id="no_equals_indented"),
    pytest.param("export hunter2", 1, "expected NAME=VALUE", id="export_without_equals"),
    pytest.param("1PW=hunter2", 1, "bad name before '='", id="name_starts_with_digit"),
    pytest.param("MY-PW=hunter2", 1, "bad name before '='", id="name_with_dash"),
    pytest.param("=hunter2", 1, "bad name before '='", id="no_name"),
    pytest.param("  export  P W=hunter2", 11, "bad name before '='", id="name_with_space"),
    pytest.param("PW='hunter2", 4, "unterminated ' quote", id="unterminated_single"),
    pytest.param('PW="hunter2', 4, 'unterminated " quote', id="unterminated_double"),
    pytest.param(
        "PW='hunter2'x", 13, "unexpected text after the closing quote", id="text_after_quote"
    ),
    pytest.param('PW="hun\\"ter2"', 10, "unexpected text after the closing quote", id="no_escapes"),
    pytest.param(
        "PW='hunter2' # note",
        14,
        "unexpected text after the closing quote",
        id="comment_after_quote",
    ),
]


@pytest.mark.parametrize(("line", "col", "message"), BAD_LINES)
def test_bad_line(tmp_path: Path, line: str, col: int, message: str):
    path = _write(tmp_path, f"# header\nGOOD=1\n{line}\nALSO_GOOD=2\n")
    result = load_secrets_file(path)
    assert len(result.problems) == 1
    problem = result.problems[0]
    assert (problem.file, problem.line, problem.col, problem.message) == (
        str(path),
        3,
        col,
        message,
    )
    assert str(problem).startswith(f"{path}:3:{col}: {message}")
    assert "hunter2" not in str(problem)  # a broken line may be a value: never echo it
    assert dict(result.values) == {"GOOD": "1", "ALSO_GOOD": "2"}


def test_every_bad_line_is_reported(tmp_path: Path):
    result = load_secrets_file(_write(tmp_path, "a\nB=1\nc\n'\n"))
    assert [(p.line, p.message) for p in result.problems] == [
        (1, "expected NAME=VALUE"),
        (3, "expected NAME=VALUE"),
        (4, "expected NAME=VALUE"),
    ]


def test_duplicate_name_is_an_error(tmp_path: Path):
    result = load_secrets_file(_write(tmp_path, "A=first\nB=x\n  export A=second\n"))
    assert [(p.line, p.col, p.message, p.hint) for p in result.problems] == [
        (3, 10, "A is set twice (first on line 1)", "keep one of them")
    ]
    assert result.values["A"] == "first"


def test_invalid_utf8_names_the_line(tmp_path: Path):
    result = load_secrets_file(_write(tmp_path, b"A=1\nB=caf\xc3\xa9 \xff\n"))
    assert [(p.line, p.col, p.message) for p in result.problems] == [(2, 8, "not valid UTF-8")]
    assert dict(result.values) == {"A": "1"}


def test_missing_file(tmp_path: Path):
    result = load_secrets_file(tmp_path / "nope.env")
    assert result.values == {}
    [problem] = result.problems
    assert (problem.line, problem.col) == (0, 0)
    assert problem.message == "cannot read secrets file: No such file or directory"


def test_directory_is_not_a_file(tmp_path: Path):
    [problem] = load_secrets_file(tmp_path).problems
    assert problem.message.startswith("cannot read secrets file: ")


@pytest.mark.parametrize(
    ("mode", "warning"),
    [
        pytest.param(0o600, None, id="owner_only"),
        pytest.param(0o400, None, id="owner_read_only"),
        pytest.param(0o700, None, id="owner_execute_is_harmless"),
        pytest.param(0o640, "readable by group or others (mode 0640)", id="group_read"),
        pytest.param(0o644, "readable by group or others (mode 0644)", id="world_read"),
        pytest.param(0o604, "readable by group or others (mode 0604)", id="others_read"),
        pytest.param(0o620, "writable by group or others (mode 0620)", id="group_write"),
        pytest.param(0o666, "readable and writable by group or others (mode 0666)", id="all"),
        pytest.param(0o611, None, id="execute_bits_only"),
    ],
)
@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_mode_warning(tmp_path: Path, mode: int, warning: str | None):
    path = _write(tmp_path, "A=secret-value\n", mode)
    result = load_secrets_file(path)
    if warning is None:
        assert result.warnings == ()
    else:
        assert result.warnings == (f"secrets file {path} is {warning} — chmod 600 {path}",)
    assert result.values == {"A": "secret-value"}


def test_mode_warning_quotes_the_path_for_the_shell(tmp_path: Path):
    folder = tmp_path / "my secrets"
    folder.mkdir()
    [warning] = load_secrets_file(_write(folder, "A=1\n", 0o644)).warnings
    assert warning.endswith(f"chmod 600 '{folder}/secrets.env'")


@settings(max_examples=200)
@given(content=st.binary() | st.text().map(str.encode))
def test_any_file_loads_without_raising(content: bytes):
    with tempfile.TemporaryDirectory() as folder:
        result = load_secrets_file(_write(Path(folder), content))
    assert isinstance(result, SecretsFile)
    for problem in result.problems:
        assert problem.line >= 1
        assert problem.col >= 1
    for name in result.values:
        assert name.isidentifier()


# --- lookup ---------------------------------------------------------------------------------


def test_environment_beats_the_file():
    secrets = Secrets({"PW": "from-file", "ONLY_FILE": "f"}, {"PW": "from-env", "ONLY_ENV": "e"})
    assert secrets.get("PW") == "from-env"
    assert secrets.get("ONLY_FILE") == "f"
    assert secrets.get("ONLY_ENV") == "e"
    assert secrets.get("NONE") is None
    assert "PW" in secrets
    assert "ONLY_FILE" in secrets
    assert "ONLY_ENV" in secrets
    assert "NONE" not in secrets
    assert 42 not in secrets


def test_empty_environment_value_still_wins():
    secrets = Secrets({"PW": "from-file"}, {"PW": ""})
    assert secrets.get("PW") == ""
    assert "PW" in secrets


def test_secrets_are_a_snapshot():
    environ = {"A": "1"}
    file_values = {"B": "2"}
    secrets = Secrets(file_values, environ)
    environ["A"] = "changed"
    environ["C"] = "new"
    file_values["B"] = "changed"
    assert (secrets.get("A"), secrets.get("B"), secrets.get("C")) == ("1", "2", None)


def test_secrets_default_empty():
    assert Secrets().get("HOME") is None


# --- masking --------------------------------------------------------------------------------


def test_mask_hides_file_values_and_referenced_environment_values():
    secrets = Secrets(
        {"DB_PASSWORD": "hunter22", "USER": "etl-user"},
        {"API_TOKEN": "tok-123456", "HOME": "/home/etl", "OTHER": "not-used"},
        referenced=frozenset({"API_TOKEN", "DB_PASSWORD", "MISSING"}),
    )
    text = "login etl-user hunter22 tok-123456 at /home/etl not-used"
    assert secrets.mask(text) == "login *** *** *** at /home/etl not-used"


def test_mask_hides_the_environment_value_that_overrides_the_file():
    secrets = Secrets({"PW": "file-value"}, {"PW": "env-value"})
    assert secrets.mask("file-value env-value") == "*** ***"


def test_mask_leaves_short_values_alone():
    assert MIN_MASK_LENGTH == 4
    secrets = Secrets({"A": "on", "B": "dev", "C": "prod", "D": ""})
    assert secrets.mask("device on prod") == "device on ***"


def test_mask_longest_first():
    secrets = Secrets({"SHORT": "abcd", "LONG": "xxabcdxx"})
    assert secrets.mask("xxabcdxx abcd") == "*** ***"


def test_mask_multiline_value_line_by_line():
    secrets = Secrets({"KEY": "line-one\nline-two\nx"})
    assert secrets.mask("line-one\nline-two\nx") == "***"
    assert secrets.mask("got line-two only") == "got *** only"


def test_mask_shell_quoted_form():
    secrets = Secrets({"PW": "it's secret"})
    # This is how the value shows in a rendered shell command.
    assert secrets.mask("run --pw 'it'\"'\"'s secret'") == "run --pw ***"


def test_mask_regex_characters_are_literal():
    secrets = Secrets({"PW": "a.*b(c)|"})
    assert secrets.mask("a.*b(c)| axxb") == "*** axxb"


def test_mask_without_secrets():
    assert Secrets().mask("nothing to hide") == "nothing to hide"


# --- never showing a value ------------------------------------------------------------------


def test_repr_never_shows_values_or_names():
    secrets = Secrets(
        {"DB_PASSWORD": "hunter22"}, {"API_TOKEN": "tok-1"}, referenced=frozenset({"API_TOKEN"})
    )
    for shown in (repr(secrets), str(secrets), f"{secrets}", f"{secrets!r}"):
        assert "hunter22" not in shown
        assert "tok-1" not in shown
        assert "DB_PASSWORD" not in shown
    assert repr(secrets) == (
        "Secrets(<1 from the file, 1 in the environment, 1 referenced; values hidden>)"
    )


def test_secrets_file_repr_never_shows_values(tmp_path: Path):
    result = load_secrets_file(_write(tmp_path, "DB_PASSWORD=hunter22\n"))
    assert "hunter22" not in repr(result)
    assert "hunter22" not in str(result)


def test_secrets_compare_by_identity_so_no_comparison_reads_a_value():
    a = Secrets({"A": "1"})
    assert a == a
    assert a != Secrets({"A": "1"})
    assert hash(a) == hash(a)
    with pytest.raises(AttributeError):
        a.environ = {}  # type: ignore[misc]
