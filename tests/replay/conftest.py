import pytest


def pytest_addoption(parser):
    parser.addoption("--check-run", required=True, help="path of the pot_check_run program")
    parser.addoption("--record-run", required=True, help="path of the pot_record_run program")
    parser.addoption("--pot-cli", required=True, help="path of the pot command-line tool")
    parser.addoption("--other-check-run", default=None,
                     help="pot_check_run of a build against the other torch line (test_cross_line.py)")
    parser.addoption("--other-python", default=None, help="the Python of the other torch line (test_cross_line.py)")


@pytest.fixture(scope="session")
def check_run_bin(request):
    return request.config.getoption("--check-run")


@pytest.fixture(scope="session")
def record_run_bin(request):
    return request.config.getoption("--record-run")


@pytest.fixture(scope="session")
def pot_cli(request):
    return request.config.getoption("--pot-cli")
