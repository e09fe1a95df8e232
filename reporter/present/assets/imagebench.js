/* imagebench: break points in long ids inside table cells, and stacked tables on phones.

   A run id, an image name or a label ("h200-torch-2.11.0-cu130@20261202T161602Z") has no
   space to wrap at, and breaking it at any character would cut it mid-word. This adds
   <wbr> (a break point that copies as nothing) after @ / , ; and before + in words of 16
   characters or more, so such a cell wraps between the id's parts; a part still 28
   characters long also breaks after _ and = ("collect_env.cuda_compiled_version"), and a
   run of 20 letters and digits (a commit hash) every 12 characters. Text stays text:
   nodes are split and inserted, never parsed as HTML.

   On a phone (the width at which Material hides its sidebars), a shown table still wider
   than its column after that is stacked (class ib-stacked, see imagebench.css): each row
   becomes a block headed by its first cell, and every other cell is named by its column's
   heading (data-ib-column). Measured again when the window changes size or a details box
   opens. Works offline, on every page. */
(function () {
  "use strict";
  var LONG = /\S{16,}/;
  var POINT = /([@\/,;])|(?=\+)/;
  var INNER = /([_=])/;  // only inside what is still 28 characters or more after POINT

  var CHUNK = 12;  // a part still longer than this (a commit hash) breaks every CHUNK characters

  function split(text, point) {
    var out = [];
    var rest = text;
    while (rest.length) {
      var m = point.exec(rest);
      var cut = m ? m.index + (m[1] ? m[1].length : 0) : rest.length;
      if (cut === 0) {  // a "+" at the start: it stays with what follows, up to the next point
        var next = point.exec(rest.slice(1));
        cut = next ? 1 + next.index + (next[1] ? next[1].length : 0) : rest.length;
      }
      var part = rest.slice(0, cut);
      var run = /[0-9A-Za-z]{20,}/.exec(part);
      if (point === POINT && part.length >= 28 && INNER.test(part)) {
        out.push.apply(out, split(part, INNER));
      } else if (run) {  // up to the run, the run in chunks, then what follows it
        var end = run.index + run[0].length;
        if (run.index > 0) { out.push(part.slice(0, run.index)); }
        for (var i = run.index; i < end; i += CHUNK) { out.push(part.slice(i, Math.min(i + CHUNK, end))); }
        if (end < part.length) { out.push(part.slice(end)); }
      } else {
        out.push(part);
      }
      rest = rest.slice(cut);
    }
    return out;
  }

  function addBreaks(root) {
    var cells = root.querySelectorAll(".md-typeset td, .md-typeset th");
    Array.prototype.forEach.call(cells, function (cell) {
      if (cell.getAttribute("data-ib-wbr")) { return; }
      cell.setAttribute("data-ib-wbr", "1");
      var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      var nodes = [];
      while (walker.nextNode()) { nodes.push(walker.currentNode); }
      nodes.forEach(function (node) {
        if (!LONG.test(node.nodeValue)) { return; }
        var parts = split(node.nodeValue, POINT);
        if (parts.length < 2) { return; }
        var frag = document.createDocumentFragment();
        parts.forEach(function (part, i) {
          if (i > 0) { frag.appendChild(document.createElement("wbr")); }
          frag.appendChild(document.createTextNode(part));
        });
        node.parentNode.replaceChild(frag, node);
      });
    });
  }

  var PHONE = "(max-width: 44.9375em)";

  function headings(table) {
    var head = table.tHead && table.tHead.rows[0];
    return head ? Array.prototype.map.call(head.cells, function (c) { return c.textContent.trim(); }) : [];
  }

  function stackWide(root) {
    var phone = window.matchMedia && window.matchMedia(PHONE).matches;
    var tables = root.querySelectorAll ? root.querySelectorAll(".md-typeset table, table") : [];
    Array.prototype.forEach.call(tables, function (table) {
      var stacked = table.classList.contains("ib-stacked");
      if (stacked) { table.classList.remove("ib-stacked"); }
      if (!phone) { return; }
      var box = table.closest(".md-typeset__scrollwrap") || table.parentElement;
      if (Math.max(table.scrollWidth, box.scrollWidth) <= box.clientWidth + 1) { return; }
      var names = headings(table);
      Array.prototype.forEach.call(table.tBodies, function (body) {
        Array.prototype.forEach.call(body.rows, function (row) {
          Array.prototype.forEach.call(row.cells, function (cell, i) {
            if (names[i]) { cell.setAttribute("data-ib-column", names[i]); }
          });
        });
      });
      table.classList.add("ib-stacked");
    });
  }

  function prepare() {
    addBreaks(document);
    stackWide(document);
  }

  var pending = null;
  window.addEventListener("resize", function () {
    if (pending) { window.clearTimeout(pending); }
    pending = window.setTimeout(function () { pending = null; stackWide(document); }, 150);
  });

  // A table in a closed details box has no width until the box opens.
  document.addEventListener("toggle", function (event) {
    if (event.target.open) { stackWide(event.target); }
  }, true);

  // Material re-renders the content on instant navigation and announces it on document$.
  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(prepare);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", prepare);
  } else {
    prepare();
  }
})();
