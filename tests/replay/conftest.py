import pytest


def pytest_addoption(parser):
    parser.addoption("--check-run", required=True, help="path of the pot_check_run program")
    parser.addoption("--pot-cli", default=None, help="path of the pot command-line tool")


@pytest.fixture(scope="session")
def check_run_bin(request):
    return request.config.getoption("--check-run")


@pytest.fixture(scope="session")
def pot_cli(request):
    path = request.config.getoption("--pot-cli")
    if not path:
        pytest.skip("--pot-cli not given")
    return path
