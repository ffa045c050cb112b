"""The rules every command line follows, kept in one place: how a usage mistake is refused.

typer builds each command as a ``TyperCommand`` and each group of commands as a
``TyperGroup``; the app registers its own with the subclasses here (``cls=Command``,
``cls=Group``), which add, for every command at once:

- an option that takes one value, given twice (``status --state failed --state lost``), is
  exit 2: click would keep the last and drop the other without a word;
- every text value, once parsed, is held to ``arguments.text_problem``: an empty one
  (``status --date ""``, ``trigger ""``; usually a script's unset variable) or one over
  ``MAX_TEXT`` characters is exit 2 naming the argument, never read as "not given";
- a usage mistake in a command given ``--json`` also prints an error document on stdout (code
  ``usage``, ``field`` naming the argument), like the CLI's other errors;
- a global option written after the command (``pysched status --url …``), or ``--json``
  written before it, gets a hint saying where it goes;
- a flag shows no value in ``--help``: typer's help prints a type after every option, so
  ``--json <bool>`` read as if it took a value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import typer

# typer 0.29 carries its own copy of click and exports only BadParameter from it; pyproject.toml
# holds typer below 0.30, so a release that moves these is taken on purpose, with the tests run
from typer._click.core import Context, Parameter
from typer._click.exceptions import NoSuchOption, UsageError
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from pysched.cli.arguments import name_problem, text_problem
from pysched.cli.output import error_document, print_json


class Command(TyperCommand):
    """A command that holds every text value to ``text_problem`` and answers a usage mistake
    with an error document when given ``--json`` (printed by the app's group, once any hint is
    added: see ``Group``)."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        # looked for, not parsed: the mistake may come before it (and parsing consumes args)
        as_json = "--json" in args
        try:
            rest = super().parse_args(ctx, args)
            check_given_once(ctx)
            check_text_values(ctx, self.get_params(ctx))
        except UsageError as exc:
            _decide(exc, json=as_json)
            raise
        return rest

    def make_parser(self, ctx: Context) -> Any:  # click's private ``_OptionParser``
        return _recording_order(super().make_parser(ctx), ctx)

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:  # a BadParameter raised by the command itself
            _decide(exc, json=bool(ctx.params.get("as_json")))
            raise

    def get_params(self, ctx: Context) -> list[Parameter]:
        return without_flag_values(super().get_params(ctx))


class Group(TyperGroup):
    """A group (the app, ``cron``, ``store``, ...) whose options are held to
    ``text_problem`` and whose usage mistakes say where an option goes.

    The app's own group (the outermost) prints a usage mistake's error document, when whoever
    raised it decided JSON was asked for (the command, from its parsed ``--json``; a group, for
    its own options, from ``--json`` among its arguments): once, with any hint included."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        # looked for, not parsed, as by ``Command`` (and before parsing, which consumes args)
        ctx.meta[_JSON_WANTED] = "--json" in args
        try:
            rest = super().parse_args(ctx, args)
            check_given_once(ctx)
            check_text_values(ctx, self.get_params(ctx))
        except NoSuchOption as exc:
            if exc.option_name == "--json":
                command = next((arg for arg in args if arg in self.commands), "COMMAND")
                add_hint(
                    exc,
                    f"--json is an option of each command: write it after the command, like "
                    f"{' '.join([*_path(ctx), command])} --json",
                )
            _decide(exc, json=bool(ctx.meta[_JSON_WANTED]))
            _print_at_the_top(ctx, exc)
            raise
        except UsageError as exc:  # a bad value of the group's own options (``--url ""``)
            _decide(exc, json=bool(ctx.meta[_JSON_WANTED]))
            _print_at_the_top(ctx, exc)
            raise
        return rest

    def make_parser(self, ctx: Context) -> Any:  # click's private ``_OptionParser``
        return _recording_order(super().make_parser(ctx), ctx)

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except NoSuchOption as exc:
            globals_ = ctx.find_root().command.params
            if exc.ctx is not None and any(exc.option_name in p.opts for p in globals_):
                option = exc.option_name
                command = " ".join(_path(exc.ctx)[1:])
                add_hint(
                    exc,
                    f"{option} is a global option: write it before the command, like "
                    f"pysched {option} … {command}",
                )
            _decide(exc, json=bool(ctx.meta.get(_JSON_WANTED)))
            _print_at_the_top(ctx, exc)
            raise
        except UsageError as exc:  # the group's callback refused a value (``--url bad://x``)
            _decide(exc, json=bool(ctx.meta.get(_JSON_WANTED)))
            _print_at_the_top(ctx, exc)
            raise

    def get_params(self, ctx: Context) -> list[Parameter]:
        return without_flag_values(super().get_params(ctx))


NAMES = frozenset({"job", "run_id"})
"""Arguments that name a job or a run, held to ``name_problem`` too."""
MAY_BE_EMPTY = frozenset({"why"})
"""Options whose empty value means what leaving them out means, and does no harm: ``--why ""``
(a script passing an unset ``$REASON``) records no reason, as no ``--why`` does."""


_ORDER = "pysched.parameter_order"
"""``ctx.meta`` key: the parameters in the order the parser met them, once per occurrence."""


def _recording_order(parser: Any, ctx: Context) -> Any:
    """``parser``, keeping its list of the parameters met (repeats included) in ``ctx.meta``:
    the parsed values keep only the last of a repeated option."""
    parse = parser.parse_args

    def parse_args(args: list[str]) -> Any:
        opts, rest, order = parse(args)
        ctx.meta[_ORDER] = list(order)
        return opts, rest, order

    parser.parse_args = parse_args
    return parser


def check_given_once(ctx: Context) -> None:
    """Raise ``BadParameter`` for an option that takes one value and was given more than once."""
    met: list[Parameter] = ctx.meta.pop(_ORDER, [])
    for param, times in Counter(met).items():
        if not isinstance(param, TyperOption) or param.multiple or param.count or param.is_flag:
            continue
        if times > 1:
            raise typer.BadParameter(
                f"given {times} times, but only one value counts: give it once",
                ctx=ctx,
                param=param,
            )


def check_text_values(ctx: Context, params: Sequence[Parameter]) -> None:
    """Raise ``BadParameter`` for the first text value with a ``text_problem``."""
    for param in params:
        value = ctx.params.get(param.name) if param.name else None
        if not isinstance(value, str) or not isinstance(param, TyperArgument | TyperOption):
            continue
        if not value and param.name in MAY_BE_EMPTY:
            continue
        problem = text_problem(value, optional=not isinstance(param, TyperArgument))
        if problem is None and isinstance(param, TyperArgument) and param.name in NAMES:
            problem = name_problem(value)
        if problem is not None:
            raise typer.BadParameter(problem, ctx=ctx, param=param)


_JSON_WANTED = "pysched.json_wanted"
"""``ctx.meta`` key: whether ``--json`` is among a group's arguments."""


_JSON = "_pysched_json"
"""Set on a usage mistake by the first level that sees it: whether an error document is due."""


def _decide(exc: UsageError, *, json: bool) -> None:
    """Whether ``exc`` gets an error document, decided by the innermost level it passes (a
    command's mistake passes up through its groups, which must not overrule it)."""
    if not hasattr(exc, _JSON):
        setattr(exc, _JSON, json)


def _print_at_the_top(ctx: Context, exc: UsageError) -> None:
    """At the app's own group, print the error document ``_decide`` asked for."""
    if ctx.parent is None and getattr(exc, _JSON, False):
        print_usage_document(exc)
        setattr(exc, _JSON, False)  # once


def print_usage_document(exc: UsageError) -> None:
    """The error document of a usage mistake, on stdout (the message goes to stderr as
    typer prints it)."""
    field: str | None = None
    if isinstance(exc, typer.BadParameter):
        field = _hinted_field(exc.param_hint) if isinstance(exc.param_hint, str) else None
        if field is None and isinstance(exc.param, TyperOption):
            field = max(exc.param.opts, key=len)  # --follow, not -f
        elif field is None and exc.param is not None:
            field = exc.param.name
    elif isinstance(exc, NoSuchOption):
        field = exc.option_name
    print_json(error_document(exc.format_message(), code="usage", field=field))


def _hinted_field(hint: str) -> str:
    """The ``field`` of a mistake raised with a ``param_hint``, named as typer names the
    others: an option by its longest flag (``-c / --config / PYSCHED_CONFIG`` is ``--config``),
    an argument by its parameter's name (``CONFIG`` is ``config``)."""
    flags = [word for word in hint.replace("/", " ").split() if word.startswith("--")]
    return max(flags, key=len) if flags else hint.lower()


def add_hint(exc: UsageError, hint: str) -> None:
    """Append ``hint:`` to the message, once (a nested group passes the error up through
    its parent)."""
    if "\nhint: " not in exc.message:
        exc.message = f"{exc.message}\nhint: {hint}"
        if isinstance(exc, NoSuchOption):
            exc.possibilities = None  # click's guesses name options of the wrong command


def without_flag_values(params: list[Parameter]) -> list[Parameter]:
    """``params``, each flag given an empty metavar so the help shows no value after it."""
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    return params


def _path(ctx: Context) -> list[str]:
    """The command path as the user typed it, starting ``pysched``."""
    return ["pysched", *ctx.command_path.split()[1:]]
