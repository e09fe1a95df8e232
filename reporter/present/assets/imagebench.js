/* imagebench: break points in long ids inside table cells.

   A run id, an image name or a label ("h200-torch-2.11.0-cu130@20261202T161602Z") has no
   space to wrap at, and breaking it at any character would cut it mid-word. This adds
   <wbr> (a break point that copies as nothing) after @ / , ; and before + in words of 16
   characters or more, so such a cell wraps between the id's parts; a part still 28
   characters long also breaks after _ and = ("collect_env.cuda_compiled_version"), and a
   run of 20 letters and digits (a commit hash) every 12 characters. Text stays text:
   nodes are split and inserted, never parsed as HTML. Works offline, on every page. */
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

  // Material re-renders the content on instant navigation and announces it on document$.
  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(function () { addBreaks(document); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { addBreaks(document); });
  } else {
    addBreaks(document);
  }
})();
