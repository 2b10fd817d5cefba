"""Where `benchlab` finds benchlab and its token: the command line over the environment over the
config file; and each missing or bad piece refused saying how to set it."""

from pathlib import Path

import pytest
from benchlab_cli.config import Config, default_config_path, resolve_config
from benchlab_cli.errors import Exit, UsageError
from benchlab_cli.main import build_parser


def _file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_command_line_wins_over_the_environment_which_wins_over_the_file(tmp_path: Path) -> None:
    path = _file(tmp_path, 'url = "http://file:8000/"\ntoken = "file-token"\n')
    env = {"BENCHLAB_URL": "http://env:8000", "BENCHLAB_TOKEN": "env-token"}

    assert resolve_config(url=None, token=None, config_path=str(path), environ={}) == Config(
        "http://file:8000", "file-token"
    )
    assert resolve_config(url=None, token=None, config_path=str(path), environ=env) == Config(
        "http://env:8000", "env-token"
    )
    assert resolve_config(url="https://cli/", token="cli-token", config_path=str(path), environ=env) == Config(
        "https://cli", "cli-token"
    )
    # Each piece on its own: the URL from the file, the token from the environment.
    assert resolve_config(url=None, token=None, config_path=str(path), environ={"BENCHLAB_TOKEN": "t"}).url == (
        "http://file:8000"
    )


def test_the_options_may_come_before_or_after_the_subcommand() -> None:
    before = build_parser().parse_args(["--url", "http://a", "--json", "hosts"])
    after = build_parser().parse_args(["hosts", "--url", "http://b", "--token", "t"])
    assert (before.url, before.token, before.json) == ("http://a", None, True)
    assert (after.url, after.token, after.json) == ("http://b", "t", False)


def test_the_default_file_is_under_xdg_config_home_or_home(tmp_path: Path) -> None:
    assert default_config_path({"HOME": "/home/ci"}) == Path("/home/ci/.config/benchlab/config.toml")
    assert default_config_path({"HOME": "/home/ci", "XDG_CONFIG_HOME": "/cfg"}) == Path("/cfg/benchlab/config.toml")
    home = tmp_path / "home"
    (home / ".config" / "benchlab").mkdir(parents=True)
    (home / ".config" / "benchlab" / "config.toml").write_text('url = "http://lab:8000"\ntoken = "x"\n')
    (home / ".config" / "benchlab" / "config.toml").chmod(0o600)
    assert resolve_config(url=None, token=None, config_path=None, environ={"HOME": str(home)}).url == "http://lab:8000"


def test_missing_pieces_say_how_to_set_them(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}  # no default file there: that is no error
    with pytest.raises(UsageError) as no_url:
        resolve_config(url=None, token="t", config_path=None, environ=env)
    with pytest.raises(UsageError) as no_token:
        resolve_config(url="http://lab:8000", token=None, config_path=None, environ=env)
    config = tmp_path / ".config" / "benchlab" / "config.toml"
    assert str(no_url.value) == (
        f'no benchlab URL: set BENCHLAB_URL in the environment, pass --url, or put `url = "..."` in {config}'
    )
    assert str(no_token.value).startswith("no API token: set BENCHLAB_TOKEN in the environment, pass --token, ")
    assert "manage.py token_create" in str(no_token.value) and no_token.value.code == Exit.USAGE == 2


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("url = http://x", "is not valid TOML"),
        ('url = "http://x"\npassword = "p"', "unknown key(s) password; it may have `url` and `token`"),
        ("token = 12345", "`token` must be a string in quotes, not int"),
    ],
)
def test_a_bad_file_is_refused_naming_it(tmp_path: Path, text: str, said: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(UsageError, match=str(path)) as refused:
        resolve_config(url=None, token=None, config_path=str(path), environ={})
    assert said in str(refused.value)


def test_a_named_file_must_exist_and_the_url_must_be_http(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"the configuration file .*nope.toml does not exist"):
        resolve_config(url=None, token=None, config_path=str(tmp_path / "nope.toml"), environ={})
    with pytest.raises(UsageError, match=r"must look like http\(s\)://host\[:port\], not 'lab:8000'"):
        resolve_config(url="lab:8000", token="t", config_path=None, environ={"HOME": str(tmp_path)})


def test_a_token_file_others_can_read_is_warned_about(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path, 'url = "http://x"\ntoken = "secret"\n', mode=0o644)
    resolve_config(url=None, token=None, config_path=str(path), environ={})
    assert f"holds a token and others can read it (chmod 600 {path})" in capsys.readouterr().err
