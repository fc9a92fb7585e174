"""Attacks on the links the service mails (grader.accounts.links, grader.web.account,
grader.courses.invitations.ask, grader.accounts.users.forgot), by an outsider who knows
only the HTTP interface: a link reused after the password changed another way, or after
its account's address changed; links for LMS and API users; guessed, cut, padded and
swapped tokens, and one purpose's link sent to another's form; open redirects and Host
headers on the new pages; telling which addresses have accounts from the answers (status,
page, headers, cookies) of "forgot your password?" and of an invitation's address form;
the rate limits; and what one address field can make the mail do. Each test passes while
the attack fails; an attack that still gets through is kept as a strict xfail."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, update

from grader import db, mail
from grader.accounts import users
from grader.accounts.models import AccountLink, User
from tests.forms import sign_in, token
from tests.mailbox import Inbox, text_of
from tests.test_invitations import NEWCOMER, accounts, ask, make_link, prof, role_of  # noqa: F401  (fixture too)
from tests.test_web import ada, site  # noqa: F401  (fixtures)

PASSWORD = "correct horse"
CHOSEN = {"password": "a brand new pw", "password_again": "a brand new pw"}
ALERT = re.compile(r'<p class="error" role="alert">(.*?)</p>', re.S)
# What differs between two answers whatever the address: when, and how much of the client's limit is left.
VARYING = {"date", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "content-length", "set-cookie"}


# ------------------------------------------------------------------ helpers

@pytest.fixture
def inbox(prof, mailbox, deliver) -> Inbox:
    return Inbox(mailbox, deliver)


@pytest.fixture
def link(prof) -> str:
    """An invitation link to DL101 (Prof's course, Ada a student of it)."""
    teacher, course_url = prof
    return make_link(teacher, course_url)


@pytest.fixture
def others(site, database_url) -> None:
    """Accounts of every other kind: Dana, whom a roster made (no password yet); an LMS
    user and an API user, both with an address."""
    with db.transaction(database_url) as s:
        users.create_user(s, email="dana@example.org", password=None, name="Dana")
        s.add(User(email="lms@example.org", name="L", external_id="https://lms.example.edu|sub-1"))
        s.add(User(email="api@example.org", name="A", external_id="api:1:someone", api_key_id=1))


def csrf(client) -> str:
    return token(client, "/password/forgot")


def follow(client, mailed: str, **form):
    return client.post(mailed, data={"csrf_token": csrf(client), **form})


def forgot(client, email: str, **kwargs):
    return client.post("/password/forgot", data={"email": email, "csrf_token": csrf(client)}, **kwargs)


def secret(link: str) -> str:
    return link.rsplit("/", 1)[1]


def page_of(answer) -> str:
    """An answer's page, its CSRF token (the session's own) left out."""
    return re.sub(r'name="csrf_token" value="[^"]*"', 'name="csrf_token"', answer.get_data(as_text=True))


def looks(answer, client) -> tuple:
    """What an asker sees of an answer, but for what varies anyway: its status, page,
    headers, the cookie attributes it sets, and the session's keys it leaves."""
    headers = sorted((k.lower(), v) for k, v in answer.headers.items() if k.lower() not in VARYING)
    cookies = sorted(tuple(sorted(part.split("=", 1)[0].strip().lower() for part in v.split(";")))
                     for v in answer.headers.getlist("Set-Cookie"))  # the cookies' names and attributes
    with client.session_transaction() as session:
        keys = sorted(session.keys())
    return answer.status_code, page_of(answer), headers, cookies, keys


def password_works(site, email: str, password: str) -> bool:
    return sign_in(site.test_client(), email, password).status_code == 302


def spent(database_url, link: str) -> bool:
    import hashlib

    with db.transaction(database_url) as s:
        row = s.scalar(select(AccountLink).where(
            AccountLink.token_hash == hashlib.sha256(secret(link).encode()).hexdigest()))
        return row is not None and row.used_at is not None


def change_address(database_url, old: str, new: str) -> None:
    """An account's address changed (by an administrator, in the database: the service has
    no page for it)."""
    with db.transaction(database_url) as s:
        s.execute(update(User).where(User.email == old).values(email=new))


# ------------------------------------------------------------------ a link outlived by a new password

@pytest.mark.parametrize("how", ["another reset link", "the set-password command", "the reset-password command"])
def test_a_reset_link_is_dead_once_the_password_changed_another_way(site, database_url, inbox, monkeypatch, how):
    """Mallory, who once read Ada's mailbox, kept a reset link; Ada changes her password
    (through another reset link, or an administrator's command): Mallory's link sets
    nothing and signs no one in."""
    from grader.cli import main

    client = site.test_client()
    assert forgot(client, "ada@example.org").status_code == 200
    kept = inbox.link("ada@example.org")
    if how == "another reset link":
        assert forgot(client, "ada@example.org").status_code == 200
        [fresh] = [m for m in inbox.links("ada@example.org") if m != kept]
        assert follow(client, fresh, password="adas own new pw", password_again="adas own new pw").status_code == 303
        new_password = "adas own new pw"
    else:
        monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
        setting = how == "the set-password command"
        args = ["--email", "ada@example.org"] + (["--password", "adas own new pw"] if setting else [])
        ran = CliRunner().invoke(main, [how.split()[1], *args])
        assert ran.exit_code == 0, ran.output
        new_password = "adas own new pw" if setting else re.search(r"only this once: (\S+)", ran.output).group(1)
    mallory = site.test_client()
    assert mallory.get(kept).status_code == 410
    assert follow(mallory, kept, **CHOSEN).status_code == 410
    assert mallory.get("/courses").status_code == 302
    assert not password_works(site, "ada@example.org", CHOSEN["password"])
    assert password_works(site, "ada@example.org", new_password)


@pytest.mark.parametrize("how", ["a reset link", "the set-password command", "a welcome link"])
def test_a_join_link_that_signs_in_is_dead_once_the_password_changed(site, database_url, inbox, link, prof,
                                                                     monkeypatch, how):
    """Mallory, who once read a mailbox, kept the join link that signs its account in
    without a password (join_existing); the owner then changes the password, to shut
    every old way in: the join link signs no one in and joins no one."""
    from grader.cli import main

    teacher, course_url = prof
    if how == "a welcome link":  # a roster's account: its join link, then its first password
        with db.transaction(database_url) as s:
            users.welcome(s, users.create_user(s, email="owner@example.org", password=None, name="Owner"))
        owner = "owner@example.org"
    else:
        owner = "bob@example.org"
    assert ask(site.test_client(), link, email=owner).status_code == 200
    kept = inbox.link(owner, says="already has an account")
    if how == "the set-password command":
        monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
        ran = CliRunner().invoke(main, ["set-password", "--email", owner, "--password", "owners new pw"])
        assert ran.exit_code == 0, ran.output
    else:
        if how == "a reset link":
            assert forgot(site.test_client(), owner).status_code == 200
        way = inbox.link(owner, says="password")
        assert follow(site.test_client(), way, password="owners new pw", password_again="owners new pw") \
            .status_code == 303
    mallory = site.test_client()
    assert follow(mallory, kept).status_code == 410
    assert mallory.get("/courses").status_code == 302
    assert role_of(database_url, owner, course_url) is None
    assert password_works(site, owner, "owners new pw")


# ------------------------------------------------------------------ a link outlived by its address

@pytest.mark.parametrize("purpose", ["welcome", "reset", "join_existing"])
def test_a_mailed_link_opens_nothing_once_its_accounts_address_changed(site, database_url, inbox, link, prof,
                                                                       purpose):
    """A link went to the account's old address, which the account no longer has (and
    which a new account now has): the link sets no password, signs no one in and joins
    no one, of the old account or the new one."""
    teacher, course_url = prof
    old = {"welcome": "dana@example.org", "reset": "ada@example.org", "join_existing": "bob@example.org"}[purpose]
    if purpose == "welcome":
        with db.transaction(database_url) as s:
            users.welcome(s, users.create_user(s, email=old, password=None, name="Dana"))
    elif purpose == "reset":
        assert forgot(site.test_client(), old).status_code == 200
    else:
        assert ask(site.test_client(), link, email=old).status_code == 200
    kept = inbox.link(old)
    change_address(database_url, old, "moved@example.org")
    with db.transaction(database_url) as s:  # the old address is someone else's now
        users.create_user(s, email=old, password=None, name="Newcomer")
    visitor = site.test_client()
    assert follow(visitor, kept, **CHOSEN).status_code == 410
    assert visitor.get("/courses").status_code == 302
    with db.transaction(database_url) as s:
        assert s.scalar(select(User.password_hash).where(User.email == old)) is None
    assert not password_works(site, "moved@example.org", CHOSEN["password"])
    assert not password_works(site, old, CHOSEN["password"])
    assert role_of(database_url, "moved@example.org", course_url) in (None, "student")
    assert role_of(database_url, old, course_url) is None


def test_a_squatted_account_is_not_handed_to_its_addresss_owner_with_the_squatters_password(site, database_url,
                                                                                           inbox, link, prof):
    """Before addresses were confirmed, Mallory signed up through a link as
    victim@example.org (self_registered, Mallory's password). The victim now gives that
    address on a class link and follows the mail: they are signed in to the account;
    Mallory must not keep a way into what the victim does there (her password, her
    sessions), or the victim must not be put into Mallory's account."""
    teacher, course_url = prof
    with db.transaction(database_url) as s:
        users.create_user(s, email="victim@example.org", password="mallory pw").self_registered = True
    mallory = site.test_client()
    assert sign_in(mallory, "victim@example.org", "mallory pw").status_code == 302
    victim = site.test_client()
    assert ask(victim, link, email="victim@example.org").status_code == 200
    joined = follow(victim, inbox.link("victim@example.org"))
    if joined.status_code == 303:  # the victim is in: Mallory must be out
        assert not password_works(site, "victim@example.org", "mallory pw")
        assert mallory.get("/courses").status_code == 302
    else:
        assert victim.get("/courses").status_code == 302


# ------------------------------------------------------------------ LMS and API users

def test_lms_and_api_users_get_no_link_and_the_same_answer(site, database_url, inbox, link, others):
    """An LMS user and an API user have addresses but no password here: "forgot your
    password?" and the join form answer for them as for an address with no account, and
    mail them nothing (their way in is their platform's, or their key's)."""
    client = site.test_client()
    for email in ("lms@example.org", "api@example.org"):
        assert page_of(forgot(client, email)) == page_of(forgot(client, "nobody@example.org"))
        assert page_of(ask(client, link, email=email)) == page_of(ask(client, link, email="nobody@example.org"))
    assert inbox.recipients() == {"nobody@example.org"}
    with db.transaction(database_url) as s:
        assert s.scalar(select(func.count(AccountLink.id)).where(
            AccountLink.email.in_(["lms@example.org", "api@example.org"]))) == 0
        assert s.scalar(select(func.count(User.id)).where(User.email == "nobody@example.org")) == 0


# ------------------------------------------------------------------ guessing tokens

def test_guessed_link_tokens_open_nothing_and_look_like_any_unknown_one(site, database_url, inbox):
    """Ada's reset link exists; near guesses (cut, one more character, one changed, other
    cases, reversed, padded, encoded NULs and newlines), too short or too long ones: each
    refused exactly like a random token (same status, same words, no address shown), on
    its page and its form; none spends or changes anything, and the real link still works."""
    client = site.test_client()
    assert forgot(client, "ada@example.org").status_code == 200
    real = secret(inbox.link("ada@example.org"))
    baseline = client.get("/account/link/" + "A" * len(real))
    said = ALERT.findall(baseline.get_data(as_text=True))
    assert baseline.status_code == 410 and said
    last = next(c for c in "BCD" if c != real[-1])  # a changed character, never the one it replaces
    first = next(c for c in "BCD" if c != real[0])
    guesses = [real[:-1], real + "A", real[:-1] + last, first + real[1:], real.swapcase(), real.upper(), real.lower(),
               real[::-1], real[:8], real[:8] + "A" * (len(real) - 8), real[:19], real[:20], "A" * 19, "A" * 20,
               "A" * 100, "A" * 101, "A" * 5000, real + "%00", "%20" + real, real + "=", real + "%3D", real + "%0a",
               real + "%20", real + ".", real + "%23", "%00"]
    for guess in guesses:
        for answer in (client.get(f"/account/link/{guess}"), follow(client, f"/account/link/{guess}", **CHOSEN)):
            text = answer.get_data(as_text=True)
            assert answer.status_code == 410, (guess[:50], answer.status_code)
            assert ALERT.findall(text) == said, guess[:50]
            assert "ada@example.org" not in text
    assert not spent(database_url, "/account/link/" + real)
    assert password_works(site, "ada@example.org", PASSWORD)
    assert follow(client, "/account/link/" + real, **CHOSEN).status_code == 303


def test_one_purposes_token_opens_no_other_door(site, database_url, inbox, link, prof, ada):
    """An invitation's token as a mailed link's, a mailed link's token as an invitation's
    (page, address form, Join); and each mailed link's form sent as another purpose's
    would be (no password for a link that sets one; a password, and another account's
    address, for the link that only signs in): refused, or doing only its own work."""
    teacher, course_url = prof
    invitation_token = secret(link)
    client = site.test_client()
    assert forgot(client, "ines@example.org").status_code == 200
    assert ask(client, link).status_code == 200
    assert ask(client, link, email="bob@example.org").status_code == 200
    with db.transaction(database_url) as s:
        users.welcome(s, users.create_user(s, email="dana@example.org", password=None, name="Dana"))
    reset, new, existing, welcome = (inbox.link("ines@example.org"), inbox.link("grace@example.org"),
                                     inbox.link("bob@example.org"), inbox.link("dana@example.org"))
    unknown = client.get("/account/link/" + "A" * 43)
    assert client.get(f"/account/link/{invitation_token}").status_code == unknown.status_code == 410
    assert ALERT.findall(page_of(client.get(f"/account/link/{invitation_token}"))) == ALERT.findall(page_of(unknown))
    for mailed in (reset, new, existing, welcome):
        assert client.get(f"/join/{secret(mailed)}").status_code == 404
        assert client.post(f"/join/{secret(mailed)}/account", data={**NEWCOMER, "csrf_token": csrf(client)}) \
            .status_code == 404
        assert ada.post(f"/join/{secret(mailed)}", data={"csrf_token": csrf(ada)}).status_code == 404
    before = accounts(database_url)
    for mailed in (reset, new, welcome):  # a form without the password it exists to set
        assert follow(client, mailed).status_code == 422
        assert follow(client, mailed, password="only one given").status_code == 422
        assert not spent(database_url, mailed)
    assert accounts(database_url) == before and client.get("/courses").status_code == 302
    # The link that signs in takes no password: Bob is signed in, with his own password still.
    joined = follow(client, existing, **CHOSEN, email="ines@example.org", user_id="1")
    assert joined.status_code == 303 and joined.headers["Location"] == course_url
    assert role_of(database_url, "bob@example.org", course_url) == "student"
    assert role_of(database_url, "ines@example.org", course_url) is None
    assert not password_works(site, "bob@example.org", CHOSEN["password"])
    assert password_works(site, "bob@example.org", PASSWORD)
    # And the new password's link sets Ines's password, whatever address the form names.
    assert follow(site.test_client(), reset, **CHOSEN, email="ada@example.org").status_code == 303
    assert password_works(site, "ines@example.org", CHOSEN["password"])
    assert password_works(site, "ada@example.org", PASSWORD)


# ------------------------------------------------------------------ redirects and Host headers

EVIL = ("https://evil.example/", "//evil.example", "/\\evil.example", "\\\\evil.example", "https:evil.example",
        "javascript:alert(1)")


def _links_and_forms(text: str) -> list[str]:
    return re.findall(r'(?:href|action|src|formaction)="([^"]*)"', text)


def test_the_new_pages_send_no_one_to_another_site(site, database_url, inbox):
    """Open redirects: a `next` (query or form) on "forgot your password?", on a mailed
    link's page, its refusal and its form: the pages link nowhere else, and the form's
    redirect is the site's own page."""
    client = site.test_client()
    for i, target in enumerate(EVIL):
        shown = [client.get("/password/forgot", query_string={"next": target}),
                 client.post("/password/forgot", query_string={"next": target},
                             data={"email": f"n{i}@example.org", "next": target, "csrf_token": csrf(client)}),
                 client.get("/account/link/" + "A" * 43, query_string={"next": target})]
        for answer in shown:
            assert answer.status_code in (200, 410) and "Location" not in answer.headers
            assert all("evil.example" not in u and "javascript" not in u for u in _links_and_forms(page_of(answer)))
    assert forgot(client, "ada@example.org").status_code == 200
    mailed = inbox.link("ada@example.org")
    for target in EVIL:
        page = client.get(mailed, query_string={"next": target}).get_data(as_text=True)
        assert all("evil.example" not in u and "javascript" not in u for u in _links_and_forms(page))
    done = client.post(mailed, query_string={"next": EVIL[0]}, data={**CHOSEN, "next": EVIL[1],
                                                                     "csrf_token": csrf(client)})
    assert done.status_code == 303
    assert not urlsplit(done.headers["Location"]).netloc and done.headers["Location"].startswith("/")
    assert not done.headers["Location"].startswith("//")
    for target in EVIL:
        for path in (f"/account/link/{target}", f"/password/forgot/{target}"):
            answer = site.test_client().get(path)
            assert answer.status_code in (404, 405, 308, 410), (path, answer.status_code)
            assert urlsplit(answer.headers.get("Location", "")).netloc in ("", "localhost")


@pytest.mark.parametrize("headers", [{"Host": "evil.example"}, {"X-Forwarded-Host": "evil.example"},
                                     {"X-Forwarded-Proto": "http", "X-Forwarded-Host": "evil.example:443"},
                                     {"Forwarded": "host=evil.example;proto=http"},
                                     {"X-Original-URL": "https://evil.example/", "X-Rewrite-URL": "//evil.example"}])
def test_mailed_links_point_at_the_public_address_whatever_the_request_says(site, database_url, inbox, link,
                                                                             headers):
    """Reset-link poisoning: the request that asks for the mail names another host (Host,
    X-Forwarded-Host, Forwarded...): the mailed links still lead to GRADER_PUBLIC_URL, and
    the other host is nowhere in the mail."""
    client = site.test_client()
    form_token = token(client, link)
    if "Host" in headers:  # the browser's cookie goes with it, to the host it names
        client.set_cookie("session", client.get_cookie("session").value, domain="evil.example")
    asked = [client.post("/password/forgot", data={"email": "ada@example.org", "csrf_token": form_token},
                         headers=headers),
             client.post(f"{link}/account", data={**NEWCOMER, "csrf_token": form_token}, headers=headers)]
    assert [a.status_code for a in asked] == [200, 200]
    everything = inbox.everything()
    for address in ("ada@example.org", "grace@example.org"):
        [whole] = [w for w in text_of(inbox.mails(address)[-1]).split() if "/account/link/" in w]
        assert whole.startswith("https://grader.example.edu/account/link/"), whole
    assert "evil.example" not in everything


# ------------------------------------------------------------------ telling addresses apart

def test_forgot_password_answers_every_address_alike(site, database_url, inbox, others):
    """Enumeration without a clock: for an account with a password, a roster's account
    with none yet, an LMS user, an API user, no account, a broken address, an empty one, a
    NUL, a huge one: the same status, page, headers (but the date and the client's
    remaining limit), cookie attributes and session, each asked from a fresh browser."""
    seen = {}
    for email in ("ada@example.org", "dana@example.org", "lms@example.org", "api@example.org",
                  "nobody@example.org", "not-an-address", "", "ada@example.org\x00", "a" * 400 + "@example.org",
                  " Ines@Example.org "):
        client = site.test_client()
        client.get("/password/forgot")
        seen[email] = looks(forgot(client, email), client)
    first = seen["nobody@example.org"]
    assert first[0] == 200
    for email, answer in seen.items():
        assert answer == first, email[:40]
    assert inbox.recipients() == {"ada@example.org", "dana@example.org", "ines@example.org"}


def test_the_join_form_answers_every_address_alike(site, database_url, inbox, link, others, prof):
    """The invitation's address form (and its refusals) for a member of the course, a
    non-member, the course's instructor, an admin, a roster's passwordless account, an
    LMS user, an API user, an address already asked for, and no account: the same status,
    page, headers, cookie attributes and session. A mistake in the form gets the same
    refusal for each (the page keeps what was typed), and so does a dead link."""
    teacher, course_url = prof
    addresses = ("ada@example.org", "bob@example.org", "prof@example.org", "ines@example.org", "dana@example.org",
                 "lms@example.org", "api@example.org", "nobody@example.org", "nobody@example.org", "Bob@Example.org ")
    for changes in ({}, {"name": "\u200b"}):
        seen = []
        for email in addresses:
            client = site.test_client()
            client.get(link)
            answer = ask(client, link, email=email, **changes)
            status, page, headers, cookies, keys = looks(answer, client)
            seen.append((status, page.replace(f'value="{email}"', 'value="…"'), headers, cookies, keys))
        assert seen[0][0] == (422 if changes else 200)
        assert all(one == seen[0] for one in seen), [addresses[i] for i, one in enumerate(seen) if one != seen[0]]
    teacher.post(f"{course_url}/invitations/{_invitation_id(database_url)}/revoke",
                 data={"csrf_token": token(teacher, course_url)})
    before, dead = accounts(database_url), []
    for email in ("ada@example.org", "nobody@example.org", "lms@example.org"):
        client = site.test_client()
        client.get(link)
        dead.append(looks(client.post(f"{link}/account", data={**NEWCOMER, "email": email,
                                                               "csrf_token": csrf(client)}), client))
    assert dead[0][0] == 410 and all(one == dead[0] for one in dead)
    assert accounts(database_url) == before
    assert inbox.recipients() == {"ada@example.org", "bob@example.org", "prof@example.org", "ines@example.org",
                                  "dana@example.org", "nobody@example.org"}


def _invitation_id(database_url) -> int:
    from grader.courses.models import Invitation

    with db.transaction(database_url) as s:
        return s.scalar(select(Invitation.id))


# ------------------------------------------------------------------ the rate limits

def test_forgot_password_limits_cannot_be_stepped_around(database_url, redis, site, inbox):
    """Per address asked about: other spellings of it, from other clients, count the same
    (and its refusal is the one any address gets). Per client: a forged X-Forwarded-For,
    X-Real-IP or Forwarded header, a new cookie, another address: still refused. No mail
    past a limit."""
    from grader.app import create_app

    strict = create_app({"TESTING": True, "DATABASE_URL": database_url, "RESET_ACCOUNT_LIMIT": "2 per hour",
                         "RESET_ADDRESS_LIMIT": "4 per hour"})

    def from_(ip: str, email: str, **headers):
        client = strict.test_client()
        return forgot(client, email, headers=headers, environ_base={"REMOTE_ADDR": ip})

    answers = [from_(f"10.0.0.{i}", email).status_code for i, email in enumerate(
        ("ada@example.org", "ADA@example.org", " Ada@Example.Org\t", "ada@EXAMPLE.ORG"))]
    assert answers == [200, 200, 429, 429]
    assert len(inbox.mails("ada@example.org")) == 2
    nobody = [from_(f"10.0.1.{i}", "nobody@example.org") for i in range(3)]
    assert [a.status_code for a in nobody] == [200, 200, 429]
    ada_refused = from_("10.0.2.1", "ada@example.org")
    assert page_of(ada_refused) == page_of(nobody[2]) and ada_refused.status_code == 429
    # One client, many addresses: its limit holds whatever it claims to be.
    one = [from_("10.9.9.9", f"m{i}@example.org").status_code for i in range(4)]
    assert one == [200] * 4
    for i, headers in enumerate(({"X-Forwarded-For": "203.0.113.7"}, {"X-Real-IP": "198.51.100.7"},
                                 {"Forwarded": "for=192.0.2.7"}, {})):
        assert from_("10.9.9.9", f"more{i}@example.org", **headers).status_code == 429
    assert len(inbox.mails("ada@example.org")) == 2


def test_a_class_link_mails_one_address_a_bounded_number_of_times(site, database_url, inbox, link):
    """Anyone with a class link asks, from many clients, for Ada's address over and over
    (in every spelling): the answers stay the same, and Ada gets at most the service's
    hourly number of mails per address."""
    spellings = ["ada@example.org", "ADA@example.org", " ada@example.org", "Ada@Example.Org"]
    answers = []
    for i in range(mail.PER_ADDRESS_HOUR + 4):
        client = site.test_client()
        answers.append(client.post(f"{link}/account", data={**NEWCOMER, "email": spellings[i % 4],
                                                             "csrf_token": token(client, link)},
                                   environ_base={"REMOTE_ADDR": f"10.1.0.{i}"}))
    assert {a.status_code for a in answers} == {200} and len({page_of(a) for a in answers}) == 1
    assert len(inbox.mails("ada@example.org")) <= mail.ACCESS_PER_ADDRESS_HOUR
    assert inbox.recipients() == {"ada@example.org"}
    with db.transaction(database_url) as s:
        sent = dict(s.execute(select(mail.Mail.kind, func.count(mail.Mail.id)).where(
            mail.Mail.to_address == "ada@example.org", mail.Mail.status != "dropped").group_by(mail.Mail.kind)).all())
    # ten of the mails anyone may ask for in the hour, no more; the roster's notice to Ada
    # went by her notices' own budget, which none of this touched
    assert sent == {"join_existing": mail.ACCESS_PER_ADDRESS_HOUR, "added": 1}


# ------------------------------------------------------------------ what one address field can make the mail do

@pytest.mark.parametrize("email", ["mallory,ada@example.org", "ada@example.org,mallory", "<ada@example.org>",
                                   "mallory:ada@example.org;", "ada@example.org;mallory", '"x"ada@example.org',
                                   "(x)ada@example.org", "ada@[127.0.0.1]", "x\\,ada@example.org"])
def test_one_address_field_reaches_one_mailbox(site, database_url, inbox, link, email):
    """An address a mail header reads as a list, a group, a comment or a bracketed address
    ("mallory,ada@example.org" is two recipients, "<ada@example.org>" is Ada): the join
    form takes it as no address (422, like any broken one), so no mail goes to anyone, nor
    to Ada past her own limit, nor to a local mailbox on the relay."""
    client = site.test_client()
    answer = ask(client, link, email=email)
    assert answer.status_code == 422, answer.status_code
    assert "That is not an e-mail address." in answer.get_data(as_text=True)
    assert forgot(client, email).status_code == 200
    assert inbox.recipients() == set()
    with db.transaction(database_url) as s:
        assert s.scalar(select(func.count(AccountLink.id))) == 0


def test_form_text_makes_no_mail_header(site, database_url, inbox, link):
    """A name carrying line breaks and header lines, an address carrying them: no header
    is added to the mail (no Bcc, no second recipient), and a name that breaks lines is
    either refused or kept on one line."""
    client = site.test_client()
    named = ask(client, link, name="Grace\r\nBcc: mallory@evil.example\r\nSubject: hi")
    assert named.status_code in (200, 422)
    addressed = ask(client, link, email="grace2@example.org\r\nBcc: mallory@evil.example")
    assert addressed.status_code == 422
    assert inbox.recipients() <= {"grace@example.org"}
    for got in inbox.box.received:
        assert got.recipients == ["grace@example.org"]
        head = got.message.as_string().split("\n\n", 1)[0]
        assert got.message["Bcc"] is None and got.message["Subject"] != "hi" and "\nBcc:" not in head


def test_a_strangers_join_mail_carries_no_text_the_asker_chose(site, database_url, inbox, link):
    """Content spoofing: Mallory gives a stranger's address on a class link, with a
    "name" that reads as the service's own words. The mail the stranger gets must not carry
    that text (the name is kept for the account the link would make, not shown to the
    address before it proved it wants one)."""
    bait = "your grader account is locked, sign in at https://evil.example/unlock to keep it"
    assert ask(site.test_client(), link, email="stranger@example.org", name=bait).status_code == 200
    [got] = inbox.mails("stranger@example.org")
    assert "evil.example" not in got.as_string() and "evil.example" not in text_of(got)


# ------------------------------------------------------------------ the link's page, as a browser sends it on

def test_a_mailed_links_pages_send_no_referer(site, database_url, inbox):
    """The link's page, its mistakes and its refusal: Referrer-Policy no-referrer, so not
    even the site's own static files and pages (and the proxy in front of them) get the
    token in a Referer."""
    client = site.test_client()
    assert forgot(client, "ada@example.org").status_code == 200
    mailed = inbox.link("ada@example.org")
    for answer in (client.get(mailed), follow(client, mailed, password="x" * 9, password_again="y" * 9),
                   client.get(mailed[:-2] + "AA")):
        assert answer.headers.get("Referrer-Policy") == "no-referrer", (answer.status_code,
                                                                        answer.headers.get("Referrer-Policy"))
