"""MkDocs hooks (mkdocs.yml `hooks:`): the checks `mkdocs build --strict` makes fail the build.

Debian 12's MkDocs (1.4) has no `validation:` settings (they came in 1.5), and it only logs at INFO a page missing
from `nav` and never checks an anchor. These hooks log a WARNING, which `--strict` turns into a failed build, for:
- a page of docs/ that `nav` does not list (1.5's `validation: omitted_files`);
- a relative link MkDocs does not rewrite (no page or file behind it: 1.5's `unrecognized_links`), an absolute
  link (`absolute_links`), and a `#fragment` that is no id of the page it points to (1.6's `anchors`);
- a relative link of the README (outside docs/, so MkDocs never reads it) to a file that does not exist, or to an
  anchor that the page it names (a docs page as built, or the README itself) does not have.
MkDocs itself already warns about a link to a missing `.md` or other file and a `nav` entry with no page.
"""

import logging
import os
import posixpath
import re
from urllib.parse import unquote, urlsplit

from markdown.extensions.toc import slugify

log = logging.getLogger("mkdocs.hooks.checks")  # under "mkdocs": counted by --strict

_IDS = re.compile(r'\sid="([^"]+)"')
_HREFS = re.compile(r'<a\s[^>]*?href="([^"]*)"')
_MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)

_nav_pages = set()


def on_nav(nav, config, files):
    _nav_pages.clear()
    _nav_pages.update(page.file.src_uri for page in nav.pages)
    for file in files.documentation_pages():
        if file.src_uri not in _nav_pages:
            log.warning(f"docs/{file.src_uri} is not listed in mkdocs.yml's nav")
    return nav


def on_env(env, config, files):
    # every page has its HTML by now (links rewritten to the built site's URLs), none is written yet
    pages = {f.page.url: f.page for f in files.documentation_pages()}
    ids = {url: set(_IDS.findall(page.content or "")) for url, page in pages.items()}
    static = {f.url for f in files if not f.is_documentation_page()}
    for url, page in pages.items():
        for href in _HREFS.findall(page.content or ""):
            _check_href(page, href, pages, ids, static)
    _check_readme(config, files, pages, ids)
    return env


def _check_href(page, href, pages, ids, static):
    scheme, netloc, path, _, fragment = urlsplit(href)
    if scheme or netloc:
        return
    where = f"docs/{page.file.src_uri}"
    if path.startswith("/"):
        log.warning(f"{where}: absolute link '{href}' (write a path relative to the page)")
        return
    if path:
        base = posixpath.dirname(page.url) if not page.url.endswith("/") else page.url.rstrip("/")
        target = posixpath.normpath(posixpath.join(base, unquote(path)))
        target = "" if target == "." else target.lstrip("/")
        key = target + "/" if target and target + "/" in ids else target
        if key not in ids:
            if target in static or target.rstrip("/") in static:
                return
            log.warning(f"{where}: link '{href}' points to no page or file of the site "
                        "(a source file outside docs/ is written as a code name)")
            return
    else:
        key = page.url
    if fragment and unquote(fragment) not in ids[key]:
        log.warning(f"{where}: link '{href}': no anchor '#{fragment}' on that page")


def _check_readme(config, files, pages, ids):
    root = os.path.dirname(config.config_file_path)
    readme_path = os.path.join(root, "README.md")
    if not os.path.exists(readme_path):
        return
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()
    prose = _CODE.sub("", _FENCE.sub("", readme))
    docs_dir = os.path.relpath(config.docs_dir, root)
    by_src = {f.src_uri: f.page.url for f in files.documentation_pages()}
    own = {slugify(h, "-") for h in _HEADING.findall(_FENCE.sub("", readme))}
    for link in _MD_LINK.findall(prose):
        scheme, netloc, path, _, fragment = urlsplit(link)
        if scheme or netloc:
            continue
        path = unquote(path)
        if not path:
            if fragment not in own:
                log.warning(f"README.md: link '{link}': no heading makes the anchor '#{fragment}'")
            continue
        if not os.path.exists(os.path.join(root, path)):
            log.warning(f"README.md: link '{link}': no file {path}")
            continue
        if fragment:
            rel = posixpath.relpath(posixpath.normpath(path), docs_dir)
            if rel not in by_src:
                log.warning(f"README.md: link '{link}': an anchor into a file that is no page of docs/")
            elif unquote(fragment) not in ids[by_src[rel]]:
                log.warning(f"README.md: link '{link}': no anchor '#{fragment}' on that page")
