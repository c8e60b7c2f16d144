"""Only what pyproject.toml cannot say: the sample logs (`sample_logs/` in a checkout) are shipped inside
the package as `tracelens/sample_logs`, so that `tracelens demo` works after `pip install tracelens-logs`."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["tracelens*"]), "tracelens.sample_logs"],
    package_dir={"tracelens.sample_logs": "sample_logs"},
)
