"""``advisor catalog``: list and show catalog entries, import and export cloud prices, check for updates.

``import`` shows what would change and applies it only with ``--apply``; a bad file changes nothing.
``check-updates`` is the only command that uses the network, and only over HTTPS.
"""

from __future__ import annotations

import sys

from advisor.commands._json import print_json
from advisor.commands._terminal import cell, echo
from advisor.units import fmt_mem


def register(subparsers) -> None:
    p = subparsers.add_parser("catalog", help="list, import and export the accelerator and price catalog",
                              description="The catalog: accelerators, cloud offers and model presets.")
    sub = p.add_subparsers(dest="catalog_command", metavar="ACTION", parser_class=type(p))

    ls = sub.add_parser("list", help="list accelerators, cloud offers or models")
    ls.add_argument("what", nargs="?", choices=("accelerators", "offers", "models"), default="accelerators")
    ls.add_argument("--json", action="store_true", help="print one JSON document")

    show = sub.add_parser("show", help="show one accelerator, cloud offer or model preset")
    show.add_argument("id")
    show.add_argument("--json", action="store_true")

    imp = sub.add_parser("import", help="import cloud prices (skypilot-catalog CSV, advisor CSV or TOML)")
    _import_flags(imp)
    imp.add_argument("file")

    exp = sub.add_parser("export", help="export the cloud offers as the advisor's CSV (or TOML by suffix)")
    exp.add_argument("file")

    chk = sub.add_parser("check-updates", help="download newer prices from the configured HTTPS URL and "
                                              "show what would change")
    chk.add_argument("--url", help="price list URL (https:// only); default ADVISOR_PRICES_URL or "
                                   "[updates] prices_url in the user catalog")
    _import_flags(chk)
    p.set_defaults(run=run)


def _where() -> int:
    """``advisor catalog`` alone: where the user's catalog file is, whether it exists, and the actions."""
    from advisor.paths import user_catalog_file

    path = user_catalog_file()
    state = "exists" if path.is_file() else "not created yet: 'catalog import FILE --apply' writes it"
    print(f"User catalog: {path} ({state})")
    print("It adds to and overrides the bundled catalog. Actions: list, show, import, export, check-updates "
          "(advisor catalog ACTION --help)")
    return 0


def _import_flags(p) -> None:
    p.add_argument("--apply", action="store_true", help="write the changes into the user catalog")
    p.add_argument("--provider", help="cloud name for a skypilot-catalog file (default: its folder name)")
    p.add_argument("--region", help="take skypilot prices of this region (default: the cheapest region)")
    p.add_argument("--price-date", help="date recorded on skypilot rows (default: today)")
    p.add_argument("--replace", action="store_true",
                   help="the file is the full price list of its providers: offers missing from it are removed")
    p.add_argument("--json", action="store_true", help="print the diff as one JSON document")


def run(args) -> int:
    from advisor.catalog.load import CatalogError
    from advisor.cli import UsageError

    if args.catalog_command is None:
        return _where()
    try:
        return {"list": _list, "show": _show, "import": _import, "export": _export,
                "check-updates": _check}[args.catalog_command](args)
    except CatalogError as exc:
        raise UsageError(" ".join(str(exc).split())) from None
    except OSError as exc:  # a write refused: read-only or full folder, a target that is not a regular file
        where = f" {exc.filename}" if exc.filename else ""
        raise UsageError(f"catalog {args.catalog_command}: cannot write{where}: {exc.strerror or exc}; "
                         "nothing was changed") from None


def _list(args) -> int:
    from advisor.catalog import load_catalog

    cat = load_catalog()
    for w in cat.warnings:
        echo(f"warning: {w}", file=sys.stderr)
    if args.what == "accelerators":
        rows = [(a.id, a.name, fmt_mem(a.memory_bytes), _tf(a.bf16_flops), a.kind) for a in cat.accelerators.values()]
        head = ("id", "name", "memory", "bf16 TFLOP/s", "kind")
        data = [dict(zip(("id", "name", "memory_bytes", "bf16_flops", "kind"),
                         (a.id, a.name, a.memory_bytes, a.bf16_flops, a.kind))) for a in cat.accelerators.values()]
    elif args.what == "offers":
        rows = [(o.id, f"{o.accelerator_count}x {o.accelerator_id}", _usd(o.on_demand_usd_per_h),
                 _usd(o.spot_usd_per_h), o.region, o.price_date[:24]) for o in cat.offers]
        head = ("id", "accelerators", "on-demand $/h", "spot $/h", "region", "price date")
        from advisor.catalog.load import offer_row

        data = [offer_row(o) for o in cat.offers]
    else:
        rows = [(m.id, m.name) for m in cat.models.values()]
        head = ("id", "name")
        data = [{"id": m.id, "name": m.name} for m in cat.models.values()]
    if args.json:
        print_json({"schema": "advisor.catalog-list/1", "what": args.what, "catalog_date": cat.date,
                          "prices_as_of": cat.prices_as_of, "items": data})
        return 0
    _table(head, rows)
    echo(f"catalog {cat.date}, prices as of {cat.prices_as_of}" + (f", user file {cat.user_file}" if cat.user_file else ""))
    return 0


def _show(args) -> int:
    from dataclasses import asdict

    from advisor.catalog import load_catalog
    from advisor.cli import UsageError

    cat = load_catalog()
    key = args.id.lower()
    if args.id in cat.accelerators:
        item, kind = asdict(cat.accelerators[args.id]), "accelerator"
    elif args.id in cat.models:
        item, kind = {k: v for k, v in asdict(cat.models[args.id]).items()}, "model"
    else:
        offers = [o for o in cat.offers if o.id == key]
        if not offers:
            raise UsageError(f"catalog show: id: unknown id {args.id!r} (see 'advisor catalog list')")
        item, kind = asdict(offers[0]), "cloud_offer"
    if args.json:
        print_json({"schema": "advisor.catalog-item/1", "kind": kind, "item": item}, default=str)
    else:
        echo(f"{kind} {args.id}")
        for k, v in item.items():
            echo(f"  {k:28} {'' if v is None else v}")
    return 0


def _import(args) -> int:
    from advisor.catalog.importer import read_offers_file

    result = read_offers_file(args.file, provider=args.provider, price_date=args.price_date, region=args.region)
    return _preview_and_apply(result, args)


def _preview_and_apply(result, args) -> int:
    from advisor.catalog import load_catalog
    from advisor.catalog.importer import apply_import, diff_offers, format_diff

    cat = load_catalog()
    diff = diff_offers(cat.offers, result.offers, replace_providers=args.replace)
    written = aside = None
    if args.apply and not diff.empty:
        written, aside = apply_import([*diff.added, *(c.new for c in diff.changed)], removed=diff.removed)
    if args.json:
        from advisor.catalog.load import offer_row

        print_json({
            "schema": "advisor.catalog-import/1", "source": result.source, "format": result.format,
            "added": [offer_row(o) for o in diff.added],
            "changed": [{"id": c.new.id, "fields": {f: {"old": getattr(c.old, f), "new": getattr(c.new, f)}
                                                    for f in c.fields}} for c in diff.changed],
            "removed": [o.id for o in diff.removed], "unchanged": diff.unchanged, "skipped": list(result.skipped),
            "applied": written is not None, "file": None if written is None else str(written)})
    else:
        for line in format_diff(diff):
            echo(line)
        for s in result.skipped:
            echo(f"skipped: {s}")
        if written is not None:
            prev = written.with_name(written.name + ".prev")
            echo(f"applied to {written}" + (f" (previous version kept as {prev})" if prev.exists() else ""))
        elif not diff.empty:
            print("nothing applied (run again with --apply to write these changes)")
    if aside:
        echo(f"warning: the old user catalog could not be read and was kept as {aside}", file=sys.stderr)
    return 0


def _export(args) -> int:
    from pathlib import Path

    from advisor.catalog import load_catalog
    from advisor.catalog.importer import export_offers_csv, export_offers_toml
    from advisor.store.atomic import write_atomic

    cat = load_catalog()
    path = Path(args.file)
    text = export_offers_toml(cat.offers) if path.suffix.lower() == ".toml" else export_offers_csv(cat.offers)
    write_atomic(path, text)
    echo(f"{len(cat.offers)} offers written to {path}", file=sys.stderr)
    return 0


def _check(args) -> int:
    from advisor.catalog.importer import read_offers_file
    from advisor.cli import UsageError
    from advisor.store.download import configured_update_url, download_prices, provider_from_url

    url = args.url or configured_update_url()
    if not url:
        raise UsageError("catalog check-updates: url: no price list URL configured (give --url https://..., set "
                         "ADVISOR_PRICES_URL, or [updates] prices_url in the user catalog)")
    path = download_prices(url)
    result = read_offers_file(path, provider=args.provider or provider_from_url(url), price_date=args.price_date,
                              region=args.region)
    return _preview_and_apply(result, args)


def _tf(v):
    return "-" if v is None else f"{v / 1e12:g}"


def _usd(v):
    return "-" if v is None else f"{v:g}"


def _table(head, rows) -> None:
    rows = [tuple("" if c is None else cell(c) for c in r) for r in rows]  # names from user catalogs and price lists
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
