"""The extra candidate features each ranking idea of bench/experiments/ranking_ideas.py adds (`extra`).

Each reads one question of bench/experiments/ranking_cache.py's cache; ranking_ideas.py's
docstring lists the ideas.
"""
from __future__ import annotations

import numpy as np


def _rank_of(values: np.ndarray) -> np.ndarray:
    order = np.argsort(-values, kind="stable")
    r = np.empty(len(values))
    r[order] = np.arange(1, len(values) + 1)
    return r


def _at(values, link):
    return np.where(link >= 0, values[np.maximum(link, 0)], 0.0)


def extra(conv: dict, q: dict, idea: str) -> dict:
    """name -> one value per candidate."""
    cand = q["cand"]
    k = q["kinds"]
    kb = q["kinds_bare"]
    prev, nxt, session = conv["structure"]
    cos = q["cosine"].astype(np.float64)
    text = q["text"].astype(np.float64)
    ent = np.zeros(len(cos)) if q["entity"] is None else q["entity"].astype(np.float64)
    out = {}
    entry, sent, ctx, win = (np.nan_to_num(k[:, j], nan=0.0).astype(np.float64) for j in range(4))
    has_sent = ~np.isnan(k[:, 1])
    if idea == "kinds":
        out.update(c_entry=entry[cand], c_sent=sent[cand], c_ctx=ctx[cand], has_sent=has_sent[cand].astype(float))
    if idea == "kinds2":
        own = np.fmax(k[:, 0], k[:, 1])
        out.update(c_own=np.nan_to_num(own)[cand], c_ctx=ctx[cand])
    if idea == "ctxgain":
        own = np.nan_to_num(np.fmax(k[:, 0], k[:, 1]))
        out.update(ctx_gain=np.maximum(ctx - own, 0)[cand])
    if idea == "ranks":
        dr, tr = _rank_of(cos), _rank_of(np.where(text > 0, text, -1))
        out.update(rr_dense=(1 / (10 + dr))[cand], rr_text=np.where(text > 0, 1 / (10 + tr), 0)[cand])
    if idea == "logrank":
        dr, tr = _rank_of(cos), _rank_of(np.where(text > 0, text, -1))
        out.update(lr_dense=-np.log(dr)[cand], lr_text=np.where(text > 0, -np.log(tr), -np.log(len(cos)))[cand])
    if idea in ("bare", "baremax"):
        bcos = np.nan_to_num(np.nanmax(kb, axis=1), nan=0.0)
        if idea == "bare":
            out.update(c_bare=bcos[cand])
        else:
            out.update(c_max=np.maximum(bcos, cos)[cand])
    if idea.startswith("nbown"):
        # a neighbour's own match counts only as far as the entry itself matches
        own = np.minimum(_at(cos, prev), cos) + np.minimum(_at(cos, nxt), cos)
        out.update(nb_cos_capped=own[cand],
                   nb_text_capped=(np.minimum(_at(text, prev), text) + np.minimum(_at(text, nxt), text))[cand])
    if idea == "nbgate":
        has = (text > 0).astype(float)
        out.update(nb_cos_g=(has * (_at(cos, prev) + _at(cos, nxt)))[cand],
                   nb_text_g=(has * (_at(text, prev) + _at(text, nxt)))[cand])
    if idea == "entxt":
        out.update(ent_text=(ent * text)[cand], ent_cos=(ent * cos)[cand])
    if idea == "adjtraw":  # the adjacent entries' raw text match alone
        t2 = np.minimum(text, 2)
        out.update(ptxt_raw=_at(t2, prev)[cand], ntxt_raw=_at(t2, nxt)[cand])
    if idea == "qinter":
        mc, mt = float(np.max(cos[cand])), float(np.max(np.minimum(text[cand], 2)))
        out.update(cos_mt=cos[cand] * mt, text_mc=text[cand] * mc, text_mt=text[cand] * mt, cos_mc=cos[cand] * mc)
    if idea == "second":
        srt = np.sort(np.nan_to_num(k, nan=-1.0), axis=1)
        out.update(c_second=np.maximum(srt[:, -2], 0)[cand])
    if idea == "sentmean":
        out.update(c_gap=(np.nan_to_num(np.nanmax(k, axis=1)) - entry)[cand])
    if idea in ("namefirst", "namepos"):
        from memstrata.retrieval import lexical

        names = [e for e in lexical.query_entities(q["query"])]
        texts = conv["texts"]
        first, pos = np.zeros(len(cand)), np.zeros(len(cand))
        for j, p in enumerate(cand):
            low = texts[p].lower()
            ws = low.split()
            for e in names:
                el = e.lower()
                i = low.find(el)
                if i >= 0:
                    pos[j] += (1.0 - i / max(len(low), 1)) / len(names)
                    if el in " ".join(ws[:3]):
                        first[j] += 1.0 / len(names)
        out.update(name_first=first) if idea == "namefirst" else out.update(name_pos=pos)
    if idea.startswith("rand"):
        import zlib

        rng = np.random.default_rng(zlib.crc32(f"{idea} {q['query']}".encode()))
        out.update(rand=rng.random(len(cand)))
    if idea in ("adj", "adjcap", "adjprod", "adjce"):
        def pair(v):
            a, b = _at(v, prev), _at(v, nxt)
            if idea == "adjcap":
                a, b = np.minimum(a, v), np.minimum(b, v)
            if idea == "adjprod":
                a, b = a * v, b * v
            return a, b
        for nm, v in (("cos", cos), ("txt", np.minimum(text, 2)), ("ent", ent)):
            if idea == "adjce" and nm == "txt":
                continue
            a, b = pair(v if idea != "adjce" else v)
            if idea == "adjce":
                a, b = np.minimum(a, v), np.minimum(b, v)
            out[f"p{nm}"], out[f"n{nm}"] = a[cand], b[cand]
    if idea in ("excess", "excesst", "excessmax", "excessct", "excessraw"):
        # how much better the entry matches than the entry before / after it (monotone in its own)
        for nm, v in (("cos", cos), ("txt", text if idea == "excessraw" else np.minimum(text, 2)), ("ent", ent)):
            if (idea == "excesst" and nm != "txt") or (idea == "excessct" and nm == "ent"):
                continue
            if idea == "excessmax":
                out[f"x{nm}"] = np.maximum(v - np.maximum(_at(v, prev), _at(v, nxt)), 0)[cand]
            else:
                out[f"xp{nm}"] = np.maximum(v - _at(v, prev), 0)[cand]
                out[f"xn{nm}"] = np.maximum(v - _at(v, nxt), 0)[cand]
    if idea == "xbase":  # the same over the fused relevance of the entries (dense + text + names)
        base = 2.0 * cos + np.minimum(text, 2) + 0.35 * ent
        out.update(xpbase=np.maximum(base - _at(base, prev), 0)[cand], xnbase=np.maximum(base - _at(base, nxt), 0)[cand])
    if idea == "xentry":  # excess of the entry chunk's own cosine (the whole text embedded)
        v = entry
        out.update(xpcose=np.maximum(v - _at(v, prev), 0)[cand], xncose=np.maximum(v - _at(v, nxt), 0)[cand])
    if idea == "sitgap":  # how far below the best entry of its sitting it is (0 for the best)
        base = 2.0 * cos + np.minimum(text, 2) + 0.35 * ent
        best = np.zeros(len(base))
        np.maximum.at(best, session, base)
        out.update(sitgap=(base - best[session])[cand])
    if idea in ("asks", "asksq", "propn", "propnI", "firstp"):
        import re

        from memstrata.retrieval import lexical

        qw = {w.lower() for w in lexical.words(q["query"])}
        vals = np.zeros(len(cand))
        for j, p in enumerate(cand):
            body = lexical.entry_part(conv["texts"][p], None)
            sents = [x for x in re.split(r"(?<=[.!?])\s+", body) if x.strip()]
            if idea.startswith("asks"):  # the share of its sentences that are questions
                vals[j] = sum(x.rstrip(" )]\"'").endswith("?") for x in sents) / max(len(sents), 1)
            elif idea == "firstp":  # the writer speaks of itself ("I", "I'm", "I've"), capped at 5
                vals[j] = min(sum(1 for x in sents for w in lexical.words(x) if w.split("'")[0] == "I"), 5) / 5
            else:  # capitalised words not opening a sentence and not in the query (names, titles)
                words = [w for x in sents for w in lexical.words(x)[1:]]
                vals[j] = min(sum(1 for w in words if w[:1].isupper() and w.lower() not in qw
                                  and (idea == "propnI" or w.split("'")[0] != "I")), 5) / 5
        if idea == "asksq":  # ... when the query is a question too
            vals = vals * float(q["query"].rstrip().endswith("?"))
        out[idea] = vals
    if idea == "excess2":  # the same against the entries two steps away
        p2, n2 = np.where(prev >= 0, prev[np.maximum(prev, 0)], -1), np.where(nxt >= 0, nxt[np.maximum(nxt, 0)], -1)
        for nm, v in (("cos", cos), ("txt", np.minimum(text, 2)), ("ent", ent)):
            out[f"xp2{nm}"] = np.maximum(v - _at(v, p2), 0)[cand]
            out[f"xn2{nm}"] = np.maximum(v - _at(v, n2), 0)[cand]
    if idea in ("localmax", "localmaxb"):
        # the entry matches at least as well as both entries beside it (times its own match)
        for nm, v in (("cos", cos), ("txt", np.minimum(text, 2)), ("ent", ent)):
            top = (v >= np.maximum(_at(v, prev), _at(v, nxt))).astype(float)
            out[f"lm{nm}"] = (top * (v if idea == "localmax" else (v > 0)))[cand]
    if idea == "dirnb":  # the entries just before and after it, apart
        base = 2.0 * cos + text + 0.35 * ent
        out.update(nb_prev=_at(base, prev)[cand], nb_next=_at(base, nxt)[cand])
    if idea == "dirnbprod":  # the same, times the entry's own cosine (an unrelated note gains little)
        base = 2.0 * cos + text + 0.35 * ent
        out.update(nbp_prev=(cos * _at(base, prev))[cand], nbp_next=(cos * _at(base, nxt))[cand])
    if idea in ("dates", "datesx", "datese", "atype", "atime"):
        # round four: does the entry say when, and does the query ask when (retrieval.dates)
        from memstrata.retrieval import dates, lexical

        bodies = [lexical.entry_part(conv["texts"][p], None) for p in cand]
        has = np.array([dates.states_time(b) for b in bodies], dtype=float)
        asks = float(dates.asks_time(q["query"]))
        if idea == "datese":  # the entry says when, whatever the query asks
            out.update(time_e=has)
        if idea in ("dates", "datesx", "atime"):
            out.update(time_q=has * asks)
            if idea == "dates":
                out.update(time_e=has)
            if idea == "atime":  # also: a query that does not ask when, entry that says when
                out.update(time_nq=has * (1 - asks))
        if idea == "atype":  # the answer's type: a time, a number, a name (capitalised, not in the query)
            import re

            ql = q["query"].lower()
            qw = {w.lower() for w in lexical.words(q["query"])}
            num_q = float(bool(re.search(r"\bhow (many|much|old|often)\b", ql)))
            name_q = float(bool(re.match(r"\s*(who|where|which|what (?!do|does|did|is|are|was|were)\w+)\b", ql)))
            num_e = np.array([bool(re.search(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|once|twice)\b",
                                             b, re.I)) for b in bodies], dtype=float)
            name_e = np.array([any(w[:1].isupper() and w.lower() not in qw and w.split("'")[0] != "I"
                                   for x in re.split(r"(?<=[.!?])\s+", b) for w in lexical.words(x)[1:])
                               for b in bodies], dtype=float)
            out.update(time_q=has * asks, num_q=num_e * num_q, name_q=name_e * name_q)
    if idea == "rdate":  # date nearness read also from the entry's resolved relative dates
        from datetime import datetime, timezone

        from memstrata.retrieval import dates, fusion, lexical
        from memstrata.retrieval.search import named_dates

        spans = named_dates(q["query"])
        vals = np.zeros(len(cand))
        if spans:
            for j, p in enumerate(cand):
                c = conv["created"][p]
                if not c:
                    continue
                body = lexical.entry_part(conv["texts"][p], None)
                ts = [datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp() + 43200
                      for d, _ in dates.resolve(body, datetime.fromtimestamp(c, tz=timezone.utc))]
                if ts:
                    vals[j] = float(fusion.date_proximity(np.asarray(ts, dtype=np.float64), spans, 86400.0).max())
        out.update(rdate=vals)
    if idea in ("head", "headx"):  # the kind the query asks for ("books") against the entry
        h = q.get("head")
        hv = np.zeros(len(cand)) if h is None else np.asarray(h, dtype=np.float64)[cand]
        out.update(c_head=hv)
        if idea == "headx":  # its gain over the query's own cosine
            out.update(c_head_gain=np.maximum(hv - cos[cand], 0) * (h is not None))
    if idea == "qnorm":  # the entry's cosines over the best of its query's candidates
        c = cos[cand]
        out.update(cos_rel=c / max(float(c.max()), 1e-6), whole_rel=q["x"][:, 13] / max(float(q["x"][:, 13].max()), 1e-6))
    if idea == "textsq":
        out.update(text2=np.minimum(text, 2)[cand] ** 2)
    return out
