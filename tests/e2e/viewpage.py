"""Driving `tally view`'s pages in headless chromium for the end-to-end tests (view_pages.py,
view_mpi.py): open a page and wait until it is drawn, click an element as a user would, read
what a table or an element shows."""
import os


class Pages:
    def __init__(self, browser, server, shots=None):
        self.b, self.sv, self.shots = browser, server, shots

    def open(self, name, query=""):
        """Opens #/name?query and waits until it is drawn."""
        self.b.eval("window.tally && (window.tally.ready = false)")
        self.b.goto(self.sv.url + "#/%s?%s" % (name, query))
        self.wait_ready(name)

    def wait_ready(self, name):
        self.b.wait("window.tally && window.tally.ready && window.tally.page === %r" % name,
                    timeout=60)

    def shot(self, name):
        if self.shots:
            self.b.screenshot(os.path.join(self.shots, "view-%s.png" % name))

    def center(self, sel):
        """Client coordinates of the middle of the first element matching sel, scrolled into
        view (None when nothing matches)."""
        return self.b.eval(
            "(() => { const e = document.querySelector(%r); if (!e) return null; "
            "e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); "
            "return [r.left + Math.min(r.width / 2, 20), r.top + r.height / 2]; })()" % sel)

    def click(self, sel, then):
        """Clicks the element sel with the mouse and waits for page then to be drawn; False
        when nothing matches sel."""
        xy = self.center(sel)
        if xy is None:
            return False
        self.b.eval("window.tally.ready = false")
        self.b.click(*xy)
        self.wait_ready(then)
        return True

    def text(self, sel):
        return self.b.eval("(() => { const e = document.querySelector(%r); "
                           "return e ? e.textContent : null; })()" % sel)

    def texts(self, sel):
        return self.b.eval("[...document.querySelectorAll(%r)].map(e => e.textContent)" % sel)

    def rows(self, sel):
        """The rows of table sel: [{name: data-name, k: {data-k or data-m: text}}]."""
        return self.b.eval("""(() => { const out = [];
            for (const tr of document.querySelectorAll(%r + ' tbody tr')) {
              const o = {name: tr.dataset.name, k: {}};
              for (const td of tr.querySelectorAll('td[data-k], td[data-m]'))
                o.k[td.dataset.k || td.dataset.m] = td.textContent;
              out.push(o); }
            return out; })()""" % sel)


def f3(v):
    """A number as the pages show seconds."""
    return "%.3f" % v


def shown(v, unit=""):
    """A number as the pages' fmt() shows it (app.js) for what the tests compare: seconds to 3
    decimals, integers as they are."""
    if unit == "s":
        return "%.3f" % v
    assert float(v).is_integer(), "not an integer: %r" % v
    return str(int(v))
