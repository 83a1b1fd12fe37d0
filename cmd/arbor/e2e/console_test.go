package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// consoleRules has a syntax error on its line 4 (a missing comma).
const consoleBadRules = "{\n  \"rules\": {\n    \".read\": false\n    \".write\": false\n  }\n}"

// consoleRules lets users read and write their own profile, with ages
// numbers, and admins do everything.
const consoleRules = `{
  "rules": {
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "auth != null && auth.uid == $uid",
        "age": { ".validate": "newData.isNumber()" }
      }
    }
  }
}`

// TestConsole drives the web console in headless Chromium against three
// real nodes: sign in, page a node of 100,000 children, edit values and
// read them back over REST, watch a write made on another node arrive,
// save rules with an error and see it at its line, ask the playground,
// check keyboard use and contrast, and see every member's applied index,
// lag and last contact, and a killed member turn red, on the leader's
// page and on a follower's.
// With ARBOR_CONSOLE_SCREENSHOTS=<dir> it also writes the README's
// screenshots there (make console-screenshots writes them to docs/).
func TestConsole(t *testing.T) {
	exec := chromium(t)
	c := StartCluster(t, 3)
	n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]

	// 100,000 children of two nodes each: two PATCHes, as one write
	// creates or changes at most 200,000 nodes.
	for half := range 2 {
		var big strings.Builder
		big.WriteString("{")
		for i := half * 50_000; i < (half+1)*50_000; i++ {
			if i > half*50_000 {
				big.WriteString(",")
			}
			fmt.Fprintf(&big, `"k%06d":{"n":%d}`, i, i)
		}
		big.WriteString("}")
		if r := n2.Do(t, "PATCH", "/big.json", big.String()); r.Status != 200 {
			t.Fatalf("seed /big.json: %d %s", r.Status, r.Body)
		}
	}
	if r := n2.Do(t, "PUT", "/users/alice.json", `{"age":30,"zip":"02134","name":"Alice","admin":false}`); r.Status != 200 {
		t.Fatalf("seed /users/alice.json: %d %s", r.Status, r.Body)
	}

	b := NewBrowser(t, exec)
	// Each step builds on the one before: the first to fail ends the test.
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	step("sign in", func(t *testing.T) {
		b.ShotOnFailure(t)
		b.Must(t, "open the node", chromedp.Navigate(n1.URL("/")))
		b.WaitJS(t, "the redirect to the console", `location.pathname === "/_/" && !document.getElementById("signin").hidden`)
		b.Must(t, "sign in", chromedp.SendKeys(chromedp.CSS("#credential"), AdminSecret+kb.Enter))
		b.WaitJS(t, "the signed-in pages", `!document.getElementById("nav").hidden && document.getElementById("who").textContent.includes("admin")`)
		where := Eval[string](t, b, `[sessionStorage.getItem("arbor.credential") === `+jsString(AdminSecret)+`, document.cookie === ""].join()`)
		if where != "true,true" {
			t.Errorf("credential in sessionStorage, no cookie: %s", where)
		}
	})

	step("page 100,000 children", func(t *testing.T) {
		b.ShotOnFailure(t)
		b.Must(t, "open /big", chromedp.Navigate(n1.URL("/_/#/data/big")))
		b.WaitJS(t, "the first page", `document.querySelector('li[data-path="/big/k000049"]')`)
		shown := Eval[int](t, b, `document.querySelectorAll('li[data-path^="/big/"]:not([hidden])').length`)
		if shown != 50 {
			t.Errorf("the first page shows %d children, want 50", shown)
		}
		b.Must(t, "next page", chromedp.Click(chromedp.CSS(`li[data-path="/big"] > .pager .next`)))
		b.WaitJS(t, "the second page", `document.querySelector('li[data-path="/big/k000099"]') && !document.querySelector('li[data-path="/big/k000000"]')`)
		b.Must(t, "expand a child", chromedp.Click(chromedp.CSS(`li[data-path="/big/k000050"] .toggle`)))
		b.WaitJS(t, "the child's value", `document.querySelector('li[data-path="/big/k000050/n"] .value')?.textContent === "50"`)
	})

	step("edit in place keeps types", func(t *testing.T) {
		b.ShotOnFailure(t)
		b.Must(t, "open /users/alice", chromedp.Navigate(n1.URL("/_/#/data/users/alice")))
		edit := func(key, text string) {
			t.Helper()
			sel := `li[data-path="/users/alice/` + key + `"]`
			b.WaitJS(t, key, `document.querySelector('`+sel+` .value')`)
			b.Must(t, "edit "+key, chromedp.Click(chromedp.CSS(sel+` .value`)),
				chromedp.WaitVisible(chromedp.CSS(sel+` .value-input`)),
				setValue(sel+` .value-input`, ""),
				chromedp.SendKeys(chromedp.CSS(sel+` .value-input`), text+kb.Enter))
		}
		edit("age", "31")
		edit("zip", "02139")
		poll(t, browserTimeout, "the edits in a REST GET on another node", func() bool {
			return n3.Do(t, "GET", "/users/alice.json", "").Body == `{"admin":false,"age":31,"name":"Alice","zip":"02139"}`
		}, func() string { return n3.Do(t, "GET", "/users/alice.json", "").Body })
	})

	step("a write elsewhere appears live", func(t *testing.T) {
		b.ShotOnFailure(t)
		if r := n3.Do(t, "PUT", "/users/alice/age.json", "99"); r.Status != 200 {
			t.Fatalf("PUT on n3: %d %s", r.Status, r.Body)
		}
		b.WaitJS(t, "the new age, flashing", `(() => { const r = document.querySelector('li[data-path="/users/alice/age"] > .node');
			return r && r.querySelector(".value").textContent === "99" && r.classList.contains("flash"); })()`)
		if r := n2.Do(t, "PUT", "/users/alice/city.json", `"Boston"`); r.Status != 200 {
			t.Fatalf("PUT on n2: %d %s", r.Status, r.Body)
		}
		b.WaitJS(t, "the new child", `document.querySelector('li[data-path="/users/alice/city"] .value')?.textContent === '"Boston"'`)
		if shots != "" {
			b.Must(t, "open the query box's answer", chromedp.Click(chromedp.CSS(`#query button[type=submit]`)))
			b.WaitJS(t, "the query's answer", `document.getElementById("q-time").textContent.includes(" ms")`)
		}
	})

	step("accessibility of the data page", func(t *testing.T) {
		b.ShotOnFailure(t)
		docsShot(t, b, "console.png")
		checkAccessibility(t, b)
	})

	step("query box", func(t *testing.T) {
		b.ShotOnFailure(t)
		b.Must(t, "open /big", chromedp.Navigate(n1.URL("/_/#/data/big")))
		b.WaitJS(t, "the query box", `document.getElementById("q-path")?.value === "/big"`)
		b.Must(t, "query", setValue("#q-startAt", `"k099990"`),
			chromedp.Click(chromedp.CSS(`#query button[type=submit]`)))
		b.WaitJS(t, "the answer and its time", `/^10 results in [0-9.]+ ms$/.test(document.getElementById("q-time").textContent) &&
			JSON.parse(document.getElementById("q-result").textContent).k099999.n === 99999`)
	})

	step("rules errors at their line", func(t *testing.T) {
		b.ShotOnFailure(t)
		b.Must(t, "open the rules", chromedp.Navigate(n1.URL("/_/#/rules")))
		b.WaitJS(t, "the rules", `document.getElementById("rules-text")?.value.includes('"rules"')`)
		setRules := func(src string) {
			t.Helper()
			b.Must(t, "set the rules", JS(`const e = document.getElementById("rules-text"); e.value = `+jsString(src)+`;
				e.dispatchEvent(new Event("input"))`))
		}
		before := n2.Do(t, "GET", "/.settings/rules.json", "").Body
		setRules(consoleBadRules)
		b.Must(t, "save", chromedp.Click(chromedp.CSS("#rules-save")))
		b.WaitJS(t, "the error at line 4", `document.getElementById("rules-error").textContent.startsWith("Line 4, column 5:") &&
			document.querySelector('#rules-gutter [data-line="4"]').classList.contains("err")`)
		if after := n2.Do(t, "GET", "/.settings/rules.json", "").Body; after != before {
			t.Errorf("rules with an error were saved: %s", after)
		}
		setRules(consoleRules)
		b.Must(t, "save", chromedp.Click(chromedp.CSS("#rules-save")))
		b.WaitJS(t, "saved", `document.getElementById("rules-error").textContent === "Rules saved."`)
		poll(t, browserTimeout, "the rules on another node", func() bool {
			return n3.Do(t, "GET", "/.settings/rules.json", "").Body == consoleRules
		})
	})

	step("playground", func(t *testing.T) {
		b.ShotOnFailure(t)
		ask := func(uid, want, rule string) {
			t.Helper()
			b.Must(t, "ask as "+uid, setValue("#pg-op", "read"),
				setValue("#pg-path", "/users/alice"),
				setValue("#pg-uid", uid),
				JS(`document.getElementById("pg-result").replaceChildren()`),
				chromedp.Click(chromedp.CSS(`#playground button[type=submit]`)))
			b.WaitJS(t, want+" for "+uid, `document.getElementById("pg-verdict")?.textContent === `+jsString(want)+
				` && document.getElementById("pg-rule").textContent === `+jsString(rule))
		}
		ask("alice", "Allowed", "/rules/users/$uid/.read")
		ask("bob", "Denied", "/rules/users/$uid/.read")
		b.Must(t, "a write", setValue("#pg-op", "write"),
			setValue("#pg-path", "/users/alice/age"),
			setValue("#pg-uid", "alice"),
			setValue("#pg-data", `"old"`),
			chromedp.Click(chromedp.CSS(`#playground button[type=submit]`)))
		b.WaitJS(t, "the failed .validate", `document.getElementById("pg-verdict")?.textContent === "Denied" &&
			document.getElementById("pg-rule").textContent === "/rules/users/$uid/age/.validate"`)
		checkAccessibility(t, b)
	})

	step("cluster", func(t *testing.T) {
		b.ShotOnFailure(t)
		leader := c.WaitStable(t, c.Nodes...)
		others := c.Others(leader)
		follower, victim := others[0], others[1]
		// Every member's applied index and lag are the leader's view, on
		// the leader's page and on a follower's alike.
		for _, n := range []*Node{leader, follower} {
			openClusterPage(t, b, n)
			b.WaitJS(t, "three members up with their applied index, lag and last contact, as "+leader.Name+" sees them",
				membersJS(leader.Name, `rows.length === 3 && rows.every((r) => r.classList.contains("up") &&
					/^[1-9]\d*$/.test(cell(r, "applied")) && /^\d+$/.test(cell(r, "lag")) &&
					(r.dataset.member === `+jsString(leader.Name)+` ? cell(r, "contact") === "is the leader" : / ago$/.test(cell(r, "contact"))))`))
			if n == leader {
				b.WaitJS(t, "charts of a few samples from /metrics", `["reads", "writes", "p99", "streams"].every((c) =>
					(document.querySelector("#chart-" + c + " .line").getAttribute("points") || "").split(" ").length >= 3)`)
				docsShot(t, b, "console-cluster.png")
				checkAccessibility(t, b)
			}
		}
		victim.Kill(t)
		// The follower's page is open: the victim turns red there, then on
		// the leader's.
		for _, n := range []*Node{follower, leader} {
			if n != follower {
				openClusterPage(t, b, n)
			}
			b.WaitJS(t, victim.Name+" red on "+n.Name+"'s page", membersJS(leader.Name, `rows.length === 3 && rows.every((r) =>
				r.classList.contains(r.dataset.member === `+jsString(victim.Name)+` ? "down" : "up"))`))
		}
		checkAccessibility(t, b)
	})

	// The stream URLs carry the credential (?auth=): no node may log them.
	for _, n := range []*Node{n1, n2} {
		if strings.Contains(n.Logs(), "auth="+AdminSecret) {
			t.Errorf("%s logged a stream URL with its credential", n.Name)
		}
	}
}

// openClusterPage opens n's console on the cluster page, signing in if
// the browser has no credential for n's origin yet.
func openClusterPage(t *testing.T, b *Browser, n *Node) {
	t.Helper()
	b.Must(t, "open the cluster page of "+n.Name, chromedp.Navigate(n.URL("/_/#/cluster")))
	b.WaitJS(t, "the sign-in form or the cluster page", `!document.getElementById("signin").hidden || !document.getElementById("page-cluster").hidden`)
	if Eval[bool](t, b, `!document.getElementById("signin").hidden`) {
		b.Must(t, "sign in to "+n.Name, chromedp.SendKeys(chromedp.CSS("#credential"), AdminSecret+kb.Enter))
	}
	b.WaitJS(t, n.Name+"'s cluster page", `!document.getElementById("page-cluster").hidden &&
		document.querySelector('#members tr[data-member=`+jsString(n.Name)+`] th')?.textContent.includes("(this node)")`)
}

// membersJS is a JavaScript test of the members table, cond over rows
// (the table's rows) and cell(row, class) (a cell's text), that also
// requires the page to say whose view the progress columns show.
func membersJS(leader, cond string) string {
	return `(() => {
		const rows = [...document.querySelectorAll("#members tr")];
		const cell = (r, c) => r.querySelector("td." + c)?.textContent ?? "";
		return document.getElementById("cluster-status").textContent.includes("as leader " + ` + jsString(leader) + ` + " sees them") && (` + cond + `);
	})()`
}

// shots is where TestConsole writes the documentation's screenshots
// ("" for nowhere).
var shots = os.Getenv("ARBOR_CONSOLE_SCREENSHOTS")

// docsShot saves the page as shots/name for the documentation.
func docsShot(t *testing.T, b *Browser, name string) {
	t.Helper()
	if shots == "" {
		return
	}
	b.Must(t, "settle", JS(`document.activeElement?.blur()`))
	path := filepath.Join(shots, name)
	if err := b.Screenshot(path); err != nil {
		t.Fatalf("screenshot for the docs: %v", err)
	}
	t.Logf("wrote %s", path)
}

// setValue sets the value of the form field sel as typing would, with
// its input and change events.
func setValue(sel, v string) chromedp.Action[chromedp.Void] {
	return JS(`const e = document.querySelector(` + jsString(sel) + `); e.value = ` + jsString(v) +
		`; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true}))`)
}

// checkAccessibility checks the page as WCAG AA asks, with checks of our
// own: text contrast (4.5:1, 3:1 for large text) against the colour it is
// drawn on, a name on every control, and keyboard reach (Tab goes through
// every enabled control in order, each showing a focus outline).
func checkAccessibility(t *testing.T, b *Browser) {
	t.Helper()
	problems := Eval[[]string](t, b, accessibilityJS)
	for _, p := range problems {
		t.Error(p)
	}
	// Keyboard: Tab from the top reaches the first controls in DOM order.
	want := Eval[[]string](t, b, `[...document.querySelectorAll("a[href], button:not([disabled]), input:not([type=file]):not([disabled]), select, textarea, [tabindex='0']")]
		.filter(e => e.offsetParent !== null && !e.closest("[hidden],dialog")).slice(0, 8).map(e => e.outerHTML.slice(0, 60))`)
	b.Must(t, "focus the top", JS(`document.body.tabIndex = -1; document.body.focus(); document.body.removeAttribute("tabindex")`))
	for i, w := range want {
		b.Must(t, "Tab", chromedp.KeyEvent(kb.Tab))
		got := Eval[string](t, b, `document.activeElement.outerHTML.slice(0, 60)`)
		outlined := Eval[bool](t, b, `getComputedStyle(document.activeElement).outlineStyle !== "none"`)
		if got != w {
			t.Errorf("Tab %d focused %s, want %s", i+1, got, w)
			break
		}
		if !outlined {
			t.Errorf("Tab %d: %s shows no focus outline", i+1, got)
		}
	}
}

// accessibilityJS returns a list of problems on the page.
const accessibilityJS = `(() => {
  const problems = [];
  const rgb = (s) => { const m = s.match(/[\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; };
  const lum = ({r, g, b}) => { const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const bgOf = (e) => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.a > 0.5) return c; } return {r: 255, g: 255, b: 255}; };
  const visible = (e) => e.offsetParent !== null || getComputedStyle(e).position === "fixed";
  for (const e of document.querySelectorAll("body *")) {
    if (!visible(e) || e.closest("svg")) continue;
    const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const s = getComputedStyle(e);
    const fg = rgb(s.color), bg = bgOf(e);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    const size = parseFloat(s.fontSize), bold = Number(s.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) problems.push("contrast " + ratio.toFixed(2) + " < " + need + ": " + e.outerHTML.slice(0, 80));
  }
  for (const e of document.querySelectorAll("button, input:not([type=file]), select, textarea, a[href]")) {
    if (!visible(e)) continue;
    const named = e.getAttribute("aria-label") || (e.id && document.querySelector('label[for="' + e.id + '"]')) || e.textContent.trim();
    if (!named) problems.push("no accessible name: " + e.outerHTML.slice(0, 80));
  }
  return problems;
})()`
