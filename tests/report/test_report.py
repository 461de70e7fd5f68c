"""pot report (docs/cli.md): the HTML written from tests/report/sample/report.json
is well formed, self-contained and escaped, marks every challenge and flag, and
bad inputs exit 2 naming the key. Standard library only.

    POT_CLI=build/src/cli/pot python3 tests/report/test_report.py
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from html.parser import HTMLParser

POT = os.environ.get("POT_CLI", "pot")
SAMPLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample")
VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


class Page(HTMLParser):
    """Collects elements and text, and records every nesting error (an end
    tag that does not close the innermost open element, or one left open)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.elements, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), list(self.stack)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), list(self.stack)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'} at {self.getpos()}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append((list(self.stack), data))

    def close(self):
        super().close()
        if self.stack:
            self.errors.append(f"left open: {self.stack}")


def pot(*args):
    return subprocess.run([POT, *args], capture_output=True, text=True)


def sample():
    with open(os.path.join(SAMPLE_DIR, "report.json")) as f:
        return json.load(f)


class RenderedSample(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pot-report-")
        cls.out = os.path.join(cls.tmp, "out.html")
        cls.result = pot("report", SAMPLE_DIR, "--out", cls.out)
        with open(cls.out, encoding="utf-8") as f:
            cls.html = f.read()
        cls.page = Page()
        cls.page.feed(cls.html)
        cls.page.close()
        cls.report = sample()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def elements(self, tag, cls=None):
        return [e for e in self.page.elements
                if e[0] == tag and (cls is None or cls in e[1].get("class", "").split())]

    def test_exit_and_stdout(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        self.assertEqual(self.result.stdout.strip(), self.out)
        self.assertEqual(self.result.stderr, "")

    def test_well_formed(self):
        self.assertTrue(self.html.startswith("<!DOCTYPE html>"))
        self.assertEqual(self.page.errors, [])
        self.assertEqual(len(self.elements("html")), 1)

    def test_header_title_and_version(self):
        version = pot("--version").stdout.split()[-1]
        self.assertRegex(version, r"^\d+\.\d+\.\d+")
        title = [d for stack, d in self.page.text if stack[-2:] == ["head", "title"]]
        self.assertEqual(title, [self.report["title"]])
        h1 = "".join(d for stack, d in self.page.text if stack[-1:] == ["h1"])
        self.assertEqual(h1, self.report["title"])
        self.assertIn("pot " + version, self.html)

    def test_one_chart_per_run(self):
        self.assertEqual(len(self.elements("svg")), len(self.report["runs"]))
        self.assertEqual(len(self.elements("path", "curve")), len(self.report["runs"]))

    def test_one_marker_per_challenge_coloured_by_verdict(self):
        markers = self.elements("circle", "marker")
        expected = [c for run in self.report["runs"] for c in run["challenges"]]
        self.assertEqual(len(markers), len(expected))
        svgs = self.elements("svg")
        self.assertTrue(all(m[2].count("svg") == 1 for m in markers))
        for (_, attrs, _), c in zip(markers, expected):
            classes = attrs["class"].split()
            self.assertIn("v-" + c["verdict"], classes)
            self.assertEqual([k for k in classes if k.startswith("v-")], ["v-" + c["verdict"]])
        tooltips = [d for stack, d in self.page.text if stack[-2:] == ["circle", "title"]]
        self.assertEqual(len(tooltips), len(expected))
        for t, c in zip(tooltips, expected):
            self.assertIn(f"step {c['step']}", t)
            self.assertIn(c["mode"], t)
            self.assertIn(c["check"], t)
        self.assertEqual(len(svgs), 2)

    def test_marker_positions_follow_the_steps(self):
        # x grows with the step inside each chart; a challenge on a NaN loss
        # sits at the top edge, like the non-finite marks.
        run = self.report["runs"][0]
        xs = [float(a["cx"]) for _, a, _ in self.elements("circle", "marker")[:len(run["challenges"])]]
        self.assertEqual(xs, sorted(xs))
        self.assertEqual(len(set(xs)), len(xs))

    def test_flags_shaded_and_labelled(self):
        flags = [f for run in self.report["runs"] for f in run["flags"]]
        groups = self.elements("g", "flag")
        self.assertEqual(len(groups), len(flags))
        labels = [d for stack, d in self.page.text if stack[-2:] == ["g", "text"] and "svg" in stack]
        for f in flags:
            self.assertIn(f["kind"], labels)
        self.assertEqual(len([e for e in self.elements("rect") if "g" in e[2]]), len(flags))

    def test_nonfinite_losses_marked(self):
        nulls = sum(l is None for run in self.report["runs"] for l in run["losses"])
        self.assertGreater(nulls, 0)
        self.assertEqual(len(self.elements("path", "nonfinite")), nulls)

    def test_tables(self):
        cells = [d for stack, d in self.page.text if "td" in stack]
        for run in self.report["runs"]:
            for c in run["challenges"]:
                self.assertIn(c["check"], cells)
                self.assertIn(c["reason"], cells)
        for v in self.report["verifiers"]:
            self.assertIn(v["name"], cells)
            self.assertIn(v["language"], cells)
        for s in self.report["summary"]:
            self.assertIn(s["value"], cells)
        self.assertEqual(len(self.elements("table", "challenges")), len(self.report["runs"]))
        self.assertIn("6.0 %", cells)  # verification / training: 0.75 / 12.5

    def test_strings_escaped(self):
        name = self.report["runs"][0]["name"]
        self.assertIn("<script>", name)
        self.assertNotIn("<script", self.html)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", self.html)
        self.assertEqual(self.elements("script"), [])
        self.assertIn(name, [d.strip() for _, d in self.page.text])
        self.assertEqual(self.elements("a"), [])  # the title holds "<a ...>"
        reason = self.report["runs"][1]["challenges"][1]["reason"]
        self.assertIn("<state>", reason)
        self.assertIn(reason, [d for _, d in self.page.text])

    def test_self_contained(self):
        self.assertNotIn("http", self.html.lower())
        self.assertNotIn("url(", self.html)
        self.assertNotIn("@import", self.html)
        for tag in ("script", "link", "img", "iframe", "object", "embed", "image", "use"):
            self.assertEqual(self.elements(tag), [], tag)
        for _, attrs, _ in self.page.elements:
            self.assertFalse({"src", "href", "xlink:href"} & set(attrs), attrs)


class DefaultOutput(unittest.TestCase):
    def test_writes_run_dir_report_html(self):
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(os.path.join(SAMPLE_DIR, "report.json"), d)
            r = pot("report", d, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            self.assertEqual(out["out"], os.path.join(d, "report.html"))
            self.assertEqual(out["runs"], 2)
            self.assertEqual(out["challenges"], 5)
            self.assertEqual(out["bytes"], os.path.getsize(out["out"]))


def mutate(fn):
    doc = copy.deepcopy(sample())
    fn(doc)
    return doc


class BadInput(unittest.TestCase):
    def reject(self, doc, *needles, code=2, raw=None):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "report.json"), "w") as f:
                f.write(raw if raw is not None else json.dumps(doc))
            r = pot("report", d)
            self.assertEqual(r.returncode, code, r.stderr)
            self.assertEqual(r.stdout, "")
            self.assertFalse(os.path.exists(os.path.join(d, "report.html")))
            lines = r.stderr.splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertTrue(lines[0].startswith("pot: error: "), lines[0])
            for n in needles:
                self.assertIn(n, lines[0])
            return lines[0]

    def test_missing_top_level_key(self):
        for key in ("title", "runs", "verifiers", "summary", "timings"):
            msg = self.reject(mutate(lambda d: d.pop(key)), f'missing key "{key}"')
            self.assertIn("top level", msg)

    def test_missing_nested_keys(self):
        self.reject(mutate(lambda d: d["runs"][1].pop("run_id")), "runs[1]", '"run_id"')
        self.reject(mutate(lambda d: d["runs"][0]["challenges"][2].pop("verdict")),
                    "runs[0].challenges[2]", '"verdict"')
        self.reject(mutate(lambda d: d["runs"][1]["flags"][0].pop("last_step")), "runs[1].flags[0]", '"last_step"')
        self.reject(mutate(lambda d: d["verifiers"][1].pop("seconds")), "verifiers[1]", '"seconds"')
        self.reject(mutate(lambda d: d["summary"][0].pop("value")), "summary[0]", '"value"')
        self.reject(mutate(lambda d: d["timings"].pop("training_seconds")), "timings", '"training_seconds"')

    def test_wrong_types(self):
        def set_(path, value):
            def f(d):
                o = d
                for k in path[:-1]:
                    o = o[k]
                o[path[-1]] = value
            return f
        cases = [
            (("title",), 3, "title: expected a string, got number"),
            (("runs",), {}, "runs: expected an array, got object"),
            (("runs", 0, "steps"), "40", "runs[0].steps: expected an integer, got string"),
            (("runs", 0, "steps"), 40.5, "runs[0].steps: expected an integer"),
            (("runs", 0, "name"), None, "runs[0].name: expected a string, got null"),
            (("runs", 0, "losses", 3), "1.5", "runs[0].losses[3]: expected a number or null, got string"),
            (("runs", 0, "challenges", 0, "step"), -7, "runs[0].challenges[0].step: expected >= 0"),
            (("runs", 0, "challenges", 0, "mode"), "fast", "runs[0].challenges[0].mode: \"fast\" is not one of"),
            (("runs", 0, "challenges", 1, "verdict"), "PASS", "runs[0].challenges[1].verdict"),
            (("runs", 0, "challenges", 0), [], "runs[0].challenges[0]: expected an object, got array"),
            (("runs", 0, "flags"), None, "runs[0].flags: expected an array, got null"),
            (("runs", 1, "run_id"), "xyz", "runs[1].run_id: \"xyz\" is not hex"),
            (("verifiers", 0, "threads"), "2", "verifiers[0].threads: expected an integer, got string"),
            (("verifiers", 0, "seconds"), "1s", "verifiers[0].seconds: expected a number, got string"),
            (("timings", "verification_seconds"), None, "timings.verification_seconds: expected a number"),
            (("timings",), [], "timings: expected an object, got array"),
        ]
        for path, value, needle in cases:
            with self.subTest(path=path):
                self.reject(mutate(set_(path, value)), needle)

    def test_losses_length_must_equal_steps(self):
        self.reject(mutate(lambda d: d["runs"][0]["losses"].pop()), "runs[0].losses", "39 values for steps = 40")
        self.reject(mutate(lambda d: d["runs"][1].update(steps=41)), "runs[1].losses", "40 values for steps = 41")

    def test_steps_inside_the_run(self):
        self.reject(mutate(lambda d: d["runs"][0]["challenges"][0].update(step=41)),
                    "runs[0].challenges[0].step", "outside the run's steps 1..40")
        self.reject(mutate(lambda d: d["runs"][0]["challenges"][0].update(step=0)), "runs[0].challenges[0].step")
        self.reject(mutate(lambda d: d["runs"][1]["flags"][0].update(first_step=34, last_step=20)),
                    "runs[1].flags[0].last_step", "before first_step")

    def test_unknown_key(self):
        self.reject(mutate(lambda d: d["runs"][0].update(colour="red")), "runs[0]", 'unknown key "colour"')

    def test_not_json_and_missing_file(self):
        self.reject(None, "report.json: not JSON", raw="{\"title\": ")
        with tempfile.TemporaryDirectory() as d:
            r = pot("report", d)
            self.assertEqual(r.returncode, 3)
            self.assertIn("report.json", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
