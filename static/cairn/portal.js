// Cairn portal: streams an answer over SSE and renders it with citations.
// No inline script/style (CSP default-src 'self'); every piece of retrieved text goes
// into the DOM through textContent, never innerHTML, because it is untrusted data.
(function () {
  "use strict";

  var root = document.getElementById("conversation");
  if (!root) return;
  var form = document.getElementById("ask-form");
  var followForm = document.getElementById("followup-form");
  var csrf = (document.querySelector("input[name=csrfmiddlewaretoken]") || {}).value || "";
  var conversationId = null;
  var turnCount = 0;

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] === null || attrs[k] === undefined || attrs[k] === false) return;
        if (k === "className") node.className = attrs[k];
        else node.setAttribute(k, attrs[k] === true ? "" : attrs[k]);
      });
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function safeUrl(url) {
    // Links come from source metadata: only http(s) may become an href.
    return /^https?:\/\//i.test(url || "") ? url : null;
  }

  function day(iso) {
    return iso ? String(iso).slice(0, 10) : "unknown";
  }

  function stamp(iso) {
    return iso ? String(iso).replace("T", " ").slice(0, 16) + " UTC" : "never";
  }

  function readFilters() {
    var data = new FormData(form);
    var filters = {};
    var sources = data.getAll("source").filter(Boolean);
    var containers = data.getAll("container").filter(Boolean);
    if (sources.length) filters.sources = sources;
    if (containers.length) filters.containers = containers;
    if (data.get("after")) filters.after = data.get("after");
    if (data.get("before")) filters.before = data.get("before");
    if (data.get("official")) filters.official_only = true;
    return filters;
  }

  function authorityBadge(tier, name) {
    if (tier === undefined || tier === null) return null;
    var labels = { 0: "System of record", 1: "Official docs", 2: "Wiki", 3: "Chat" };
    var label = name || labels[tier] || "Tier " + tier;
    return el("span", { className: "badge tier-" + tier, title: "Authority tier " + tier }, label);
  }

  // One question and its answer.
  function Turn(question) {
    turnCount += 1;
    this.id = "t" + turnCount;
    this.question = question;
    this.evidence = {};
    this.order = []; // source keys (one per document) in first-citation order -> marker numbers
    this.quotes = {};
    this.plan = null;
    this.claims = [];
    this.gotClaim = false;
    this.finished = false;
    var article = el("article", { className: "turn", "aria-labelledby": this.id + "-q", "aria-busy": "true" });
    article.appendChild(el("h2", { id: this.id + "-q", className: "question" }, question));
    this.planLine = article.appendChild(el("p", { className: "plan" }, ""));
    this.state = article.appendChild(el("p", { className: "state", role: "status" }, "Searching the sources you can read…"));
    this.body = article.appendChild(el("div", { className: "answer-body", "aria-live": "polite" }));
    this.claimList = el("ol", { className: "claims" });
    this.body.appendChild(this.claimList);
    // Claims the writer stated past its own four ("extra" in the API): verified like the others, but they did not
    // decide whether to answer, so they are shown apart, after the answer.
    this.extraSection = el("section", { className: "claims-extra", "aria-labelledby": this.id + "-xh" });
    this.extraSection.appendChild(el("h3", { id: this.id + "-xh" }, "Also in the sources"));
    this.extraList = this.extraSection.appendChild(el("ol", { className: "claims" }));
    this.extraSection.hidden = true;
    this.body.appendChild(this.extraSection);
    this.notices = article.appendChild(el("div", { className: "notices" }));
    var aside = el("section", { className: "sources", "aria-labelledby": this.id + "-sh" });
    aside.appendChild(el("h3", { id: this.id + "-sh" }, "Sources"));
    this.sourceList = aside.appendChild(el("ol", { className: "source-list" }));
    aside.hidden = true;
    this.sourcesPanel = article.appendChild(aside);
    this.asof = article.appendChild(el("p", { className: "asof" }));
    this.results = article.appendChild(el("div", { className: "ranked" }));
    this.article = article;
    root.appendChild(article);
    var self = this;
    this.slowTimer = window.setTimeout(function () {
      if (!self.gotClaim && !self.finished) self.state.textContent = "Still working: reading and checking passages takes a few seconds…";
    }, 3000);
    this.verySlowTimer = window.setTimeout(function () {
      if (!self.finished) self.state.textContent = "This is taking longer than usual. You can wait, or switch to Results only.";
    }, 20000);
  }

  Turn.prototype.onPlan = function (plan) {
    this.plan = plan;
    if (plan && plan.trace_id) this.traceId = plan.trace_id;
    var bits = [];
    if (plan && plan.normalized && plan.normalized !== plan.original) bits.push("Searching for “" + plan.normalized + "”");
    var f = (plan && plan.filters) || {};
    if (f.sources && f.sources.length) bits.push("in " + f.sources.join(", "));
    if (f.containers && f.containers.length) bits.push("within " + f.containers.join(", "));
    if (f.after || f.before) bits.push("updated " + (f.after ? "from " + day(f.after) + " " : "") + (f.before ? "before " + day(f.before) : ""));
    if (f.official_only) bits.push("official sources only");
    this.planLine.textContent = bits.join(" · ");
  };

  Turn.prototype.onSources = function (list) {
    var self = this;
    (list || []).forEach(function (e) {
      if (e && e.id) self.evidence[e.id] = e;
    });
  };

  // Passages of one document share one entry (and one marker) in the sources panel.
  Turn.prototype.sourceKey = function (evidenceId) {
    var e = this.evidence[evidenceId];
    return e && e.document_id !== undefined && e.document_id !== null ? "doc:" + e.document_id : "ev:" + evidenceId;
  };

  Turn.prototype.markerFor = function (evidenceId) {
    var key = this.sourceKey(evidenceId);
    var n = this.order.indexOf(key);
    if (n === -1) {
      this.order.push(key);
      n = this.order.length - 1;
      this.addSource(evidenceId, n + 1);
    }
    return n + 1;
  };

  Turn.prototype.addSource = function (evidenceId, n) {
    var e = this.evidence[evidenceId] || { id: evidenceId, title: "(source)" };
    var li = el("li", { id: this.id + "-src-" + n, className: "source", "data-evidence-id": evidenceId });
    li.appendChild(el("span", { className: "num", "aria-hidden": "true" }, "[" + n + "]"));
    var href = safeUrl(e.canonical_url || e.url);
    var title = e.title || "(untitled)";
    li.appendChild(href ? el("a", { href: href, rel: "noopener noreferrer", target: "_blank" }, title) : el("span", { className: "title" }, title));
    var meta = el("span", { className: "meta" });
    meta.appendChild(document.createTextNode([e.source_system, e.container].filter(Boolean).join(" · ") + " · updated " + day(e.updated_at) + " "));
    var badge = authorityBadge(e.authority_tier, e.authority);
    if (badge) meta.appendChild(badge);
    li.appendChild(meta);
    // Filled with the exact quotes the claims cite (below); the passage start until then.
    var bq = el("blockquote", { className: "quote" }, (e.text || e.snippet || "").slice(0, 300));
    this.quotes[this.sourceKey(evidenceId)] = { node: bq, seen: [] };
    li.appendChild(bq);
    li.appendChild(this.flagControl({ evidence_id: evidenceId }, "source " + n));
    this.sourceList.appendChild(li);
    this.sourcesPanel.hidden = false;
  };

  Turn.prototype.onClaim = function (claim, index) {
    var self = this;
    if (!claim || !claim.text) return;
    if (!this.gotClaim) this.state.textContent = "Answer (each sentence quotes the source marked after it):";
    this.gotClaim = true;
    this.claims.push(claim);
    var li = el("li", { className: "claim", "data-claim-id": claim.id || "",
      "data-claim-index": String(index === undefined ? this.claims.length - 1 : index) });
    li.appendChild(el("span", { className: "claim-text" }, claim.text));
    if (claim.view) li.appendChild(el("span", { className: "view-label" }, " (" + claim.view + ")"));
    (claim.citations || []).forEach(function (c) {
      var n = self.markerFor(c.evidence_id);
      var q = self.quotes[self.sourceKey(c.evidence_id)];
      if (q && c.quote && q.seen.indexOf(c.quote) === -1) {
        q.seen.push(c.quote);
        q.node.textContent = q.seen.map(function (x) { return "“" + x + "”"; }).join(" … ");
      }
      var tipId = self.id + "-tip-" + (claim.id || self.claims.length) + "-" + n;
      var wrap = el("span", { className: "cite" });
      var marker = el("a", { className: "marker", href: "#" + self.id + "-src-" + n, "aria-describedby": tipId,
        "aria-label": "Source " + n }, "[" + n + "]");
      wrap.appendChild(document.createTextNode(" "));
      wrap.appendChild(marker);
      // Shown on hover and on keyboard focus (CSS :hover / :focus-within): the exact quote.
      wrap.appendChild(el("span", { id: tipId, role: "tooltip", className: "tooltip" }, "“" + (c.quote || "") + "”"));
      li.appendChild(wrap);
    });
    li.appendChild(this.flagControl({ claim_id: claim.id, claim_text: claim.text,
      evidence_id: ((claim.citations || [])[0] || {}).evidence_id }, "this claim"));
    if (claim.extra) {
      li.className += " claim-extra";
      this.extraList.appendChild(li);
      this.extraSection.hidden = false;
    } else {
      this.claimList.appendChild(li);
    }
  };

  // A later stage (conflicts, abstention) withdrew a claim that was already shown.
  Turn.prototype.claimNode = function (index) {
    return this.body.querySelector('li.claim[data-claim-index="' + String(Number(index)) + '"]');
  };

  Turn.prototype.onRetract = function (data) {
    var li = this.claimNode(data.index);
    if (li) li.remove();
    if (!this.extraList.querySelector("li.claim")) this.extraSection.hidden = true;
    if (!this.body.querySelector("li.claim")) this.gotClaim = false;
  };

  // The conflict stage labelled a shown claim (e.g. one of two equal-rank views, with its date).
  Turn.prototype.onAnnotate = function (data) {
    var li = this.claimNode(data.index);
    if (!li || !data.view || li.querySelector(".view-label")) return;
    li.insertBefore(el("span", { className: "view-label" }, " (" + data.view + ")"), li.querySelector(".claim-text").nextSibling);
  };

  Turn.prototype.flagControl = function (target, what) {
    var self = this;
    var url = root.dataset.feedbackUrl;
    var details = el("details", { className: "flag" });
    details.appendChild(el("summary", { "aria-label": "Flag " + what }, "Flag"));
    if (!url) {
      details.appendChild(el("span", { className: "muted" }, "Feedback is not available yet."));
      return details;
    }
    var box = el("div", { className: "flag-options", role: "group", "aria-label": "Flag " + what + " as" });
    [["wrong", "Wrong"], ["unsupported", "Not supported by the source"], ["stale", "Out of date"]].forEach(function (pair) {
      var b = el("button", { type: "button", className: "flag-btn", "data-kind": pair[0] }, pair[1]);
      b.addEventListener("click", function () { self.sendFlag(target, pair[0], details); });
      box.appendChild(b);
    });
    details.appendChild(box);
    return details;
  };

  Turn.prototype.sendFlag = function (target, kind, details) {
    // Only what the feedback API binds server-side to the audited answer (trace id).
    var payload = { target: target.claim_id ? "claim" : "source", verdict: kind, trace_id: this.traceId || "" };
    if (target.claim_id) { payload.claim_id = target.claim_id; payload.claim_text = target.claim_text || ""; }
    else if (target.evidence_id) payload.evidence_id = target.evidence_id;
    var status = details.querySelector(".flag-status") || details.appendChild(el("span", { className: "flag-status", role: "status" }));
    status.textContent = "Sending…";
    fetch(root.dataset.feedbackUrl, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf, "Accept": "application/json" },
      body: JSON.stringify(payload)
    }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      status.textContent = "Thanks, flagged as " + kind + ".";
      details.classList.add("flagged");
      details.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    }).catch(function () {
      status.textContent = "Could not send the flag. Try again.";
    });
  };

  Turn.prototype.renderResults = function (results, heading) {
    this.results.textContent = "";
    this.results.appendChild(el("h3", null, heading));
    if (!results || !results.length) {
      this.results.appendChild(el("p", { className: "empty" }, "Nothing you can read matches this. Try fewer words, or remove a filter."));
      return;
    }
    var ol = el("ol", { className: "result-list" });
    results.forEach(function (r) {
      var li = el("li", { className: "result" });
      var href = safeUrl(r.url);
      li.appendChild(href ? el("a", { href: href, rel: "noopener noreferrer" }, r.title || "(untitled)") : el("span", null, r.title || "(untitled)"));
      var meta = el("span", { className: "meta" }, [r.source_system, r.container].filter(Boolean).join(" · ") + " · updated " + day(r.updated_at) + " ");
      var badge = authorityBadge(r.authority_tier);
      if (badge) meta.appendChild(badge);
      li.appendChild(meta);
      li.appendChild(el("p", { className: "snippet" }, r.snippet || ""));
      ol.appendChild(li);
    });
    this.results.appendChild(ol);
  };

  // The engine's conflict section: {status, statement, pairs: [{resolution, sources, winner?, dissent?}]}.
  Turn.prototype.renderConflicts = function (conflict) {
    var self = this;
    if (!conflict || !conflict.pairs || !conflict.pairs.length) return;
    var box = el("div", { className: "conflict", role: "note" });
    // Statements scoped to different versions do not disagree: each is labelled with its version.
    var scoped = conflict.status === "scoped";
    box.appendChild(el("strong", null, scoped ? "The sources describe different versions. " : "The sources disagree. "));
    if (conflict.statement) box.appendChild(el("span", null, conflict.statement));
    var ul = el("ul");
    conflict.pairs.forEach(function (pair) {
      (pair.sources || []).forEach(function (src) {
        var role = pair.winner ? (src.evidence_id === pair.winner ? "Preferred" : "Dissent") : "View";
        var li = el("li", { className: role.toLowerCase() });
        li.appendChild(el("strong", null, role + ": "));
        li.appendChild(document.createTextNode("“" + (src.statement || "") + "” — "));
        var href = safeUrl(src.url);
        li.appendChild(href ? el("a", { href: href, rel: "noopener noreferrer" }, src.title || "source") : el("span", null, src.title || "source"));
        li.appendChild(document.createTextNode(" (" + [src.authority, src.date, src.version ? "version " + src.version : ""].filter(Boolean).join(", ") + ")"));
        ul.appendChild(li);
      });
    });
    box.appendChild(ul);
    self.notices.appendChild(box);
  };

  Turn.prototype.onDone = function (done) {
    this.finished = true;
    window.clearTimeout(this.slowTimer);
    window.clearTimeout(this.verySlowTimer);
    this.article.setAttribute("aria-busy", "false");
    var answer = done.answer || done;
    if (done.conversation_id) conversationId = done.conversation_id;
    this.traceId = done.trace_id || (done.trace && done.trace.id) || this.traceId || null;
    if (done.plan && !this.plan) this.onPlan(done.plan);
    var asOf = done.as_of || {};
    this.asof.textContent = "Content as of " + stamp(asOf.content) + " · permissions as of " + stamp(asOf.permissions);
    var dropped = answer.dropped_claims || 0;
    if (dropped) {
      this.notices.appendChild(el("p", { className: "notice removed", role: "note" },
        dropped + " claim" + (dropped === 1 ? " was" : "s were") + " removed because the sources did not support " + (dropped === 1 ? "it" : "them") + "."));
    }
    // A compound question's parts without a supported answer are named, never silently dropped.
    (answer.unanswered_parts || []).forEach(function (part) {
      this.notices.appendChild(el("p", { className: "notice unanswered", role: "note" },
        "Not answered from your sources: " + (part.question || "")));
    }, this);
    this.renderConflicts(done.conflict || this.conflict);
    var abst = answer.abstention;
    if (abst) {
      this.state.textContent = "";
      var box = el("div", { className: "abstention", role: "status" });
      var reason = abst.reason === "navigational" ? "Here is the page you are looking for." : "No confident answer.";
      box.appendChild(el("strong", null, reason + " "));
      box.appendChild(el("span", null, abst.message || ""));
      box.appendChild(el("span", { className: "reason" }, " (reason: " + String(abst.reason || "unknown").replace(/_/g, " ") + ")"));
      this.body.insertBefore(box, this.claimList);
      this.renderResults(done.results || this.lastResults, abst.reason === "navigational" ? "Best matches" : "Ranked results you can read");
    } else if (!this.gotClaim) {
      this.state.textContent = "No answer was produced.";
      this.renderResults(done.results || this.lastResults, "Ranked results you can read");
    } else {
      this.state.textContent = "Answer (each sentence quotes the source marked after it):";
      // A comparison's or a multi-hop chain's conclusion is computed in code from the cited figures;
      // it is labelled as such, because it is not itself a quote.
      if (answer.conclusion) {
        var conclusion = el("p", { className: "conclusion", role: "note" });
        conclusion.appendChild(el("strong", null, "Computed from the cited sources: "));
        conclusion.appendChild(el("span", null, answer.conclusion));
        this.body.insertBefore(conclusion, this.claimList);
      }
    }
    if (followForm) followForm.hidden = false;
  };

  Turn.prototype.onError = function (err) {
    this.finished = true;
    window.clearTimeout(this.slowTimer);
    window.clearTimeout(this.verySlowTimer);
    this.article.setAttribute("aria-busy", "false");
    this.state.textContent = "";
    var msg = (err && (err.message || (err.error && err.error.message))) || "Something went wrong.";
    var code = (err && (err.code || (err.error && err.error.code))) || "";
    this.body.appendChild(el("p", { className: "error", role: "alert" }, msg + (code ? " (" + code + ")" : "") + " Please try again."));
    if (followForm) followForm.hidden = false;
  };

  // Apply one whole (non-streamed) answer response as if it had streamed.
  Turn.prototype.applyWhole = function (body) {
    var self = this;
    this.onPlan(body.plan || {});
    this.onSources(body.evidence || []);
    ((body.answer || {}).claims || []).forEach(function (c) { self.onClaim(c); });
    this.onDone(body);
  };

  Turn.prototype.dispatch = function (type, data) {
    switch (type) {
      case "plan":
        if (data.conversation_id) conversationId = data.conversation_id;
        this.onPlan(data.plan || data); break;
      case "sources": case "evidence":
        if (data.results) this.lastResults = data.results;
        if (data.conflict) this.conflict = data.conflict;
        this.onSources(data.evidence || data.sources || data); break;
      case "claim": this.onClaim(data.claim || data, data.index); break;
      case "retract": this.onRetract(data); break;
      case "annotate": this.onAnnotate(data); break;
      case "claims": var self = this; (data.claims || data).forEach(function (c) { self.onClaim(c); }); break;
      case "done": this.onDone(data); break;
      case "error": this.onError(data); break;
      default: break; // heartbeats, progress, future event types
    }
  };

  function parseSse(turn, response) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function handleBlock(block) {
      var type = "message";
      var lines = [];
      block.split("\n").forEach(function (line) {
        if (line.indexOf("event:") === 0) type = line.slice(6).trim();
        else if (line.indexOf("data:") === 0) lines.push(line.slice(5).replace(/^ /, ""));
      });
      if (!lines.length) return;
      var data;
      try { data = JSON.parse(lines.join("\n")); } catch (e) { return; }
      turn.dispatch(type, data);
    }
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) {
          if (buffer.trim()) handleBlock(buffer);
          if (!turn.finished) turn.onError({ message: "The answer stream ended early.", code: "stream_interrupted" });
          return;
        }
        buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n/g, "\n");
        var idx;
        while ((idx = buffer.indexOf("\n\n")) !== -1) {
          handleBlock(buffer.slice(0, idx));
          buffer = buffer.slice(idx + 2);
        }
        return pump();
      });
    }
    return pump();
  }

  function errorFrom(response) {
    return response.json().then(function (b) { return b.error || { message: "HTTP " + response.status }; },
      function () { return { message: "The server answered " + response.status + ".", code: "http_" + response.status }; });
  }

  function ask(question) {
    var turn = new Turn(question);
    var body = { question: question, filters: readFilters() };
    if (conversationId) body.conversation_id = conversationId;
    var headers = { "Content-Type": "application/json", "X-CSRFToken": csrf };
    var streamUrl = root.dataset.streamUrl;
    var fallback = function () {
      return fetch(root.dataset.answerUrl, { method: "POST", credentials: "same-origin",
        headers: Object.assign({ Accept: "application/json" }, headers), body: JSON.stringify(body) })
        .then(function (r) {
          if (!r.ok) return errorFrom(r).then(function (e) { turn.onError(e); });
          return r.json().then(function (j) { turn.applyWhole(j); });
        });
    };
    var run = streamUrl
      ? fetch(streamUrl, { method: "POST", credentials: "same-origin",
          headers: Object.assign({ Accept: "text/event-stream" }, headers), body: JSON.stringify(body) })
          .then(function (r) {
            if (r.status === 404 || r.status === 405) return fallback();
            if (!r.ok) return errorFrom(r).then(function (e) { turn.onError(e); });
            return parseSse(turn, r);
          })
      : fallback();
    run.catch(function () { turn.onError({ message: "Cairn could not be reached.", code: "network_error" }); });
    return turn;
  }

  if (followForm) {
    followForm.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var input = document.getElementById("followup");
      var q = (input.value || "").trim();
      if (!q) return;
      input.value = "";
      followForm.hidden = true;
      var turn = ask(q);
      turn.article.scrollIntoView({ block: "start" });
    });
  }

  ask(root.dataset.question);
})();
