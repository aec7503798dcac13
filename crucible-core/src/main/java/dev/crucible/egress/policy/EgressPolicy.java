package dev.crucible.egress.policy;

import dev.crucible.egress.address.Target;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Where a sandbox may connect: a list of {@code HOST:PORT} entries. Immutable and thread-safe.
 *
 * <p>Entries, case-insensitive, whitespace around them ignored:
 * <ul>
 *   <li>{@code pypi.org} or {@code pypi.org:8080}: that name only. <b>No port means 443</b>: package managers speak
 *       https; plain http on 80 must be listed as {@code host:80}.</li>
 *   <li>{@code *.pythonhosted.org[:PORT]}: every subdomain at any depth, not the domain itself (list it too). The
 *       domain must have two labels or more ({@code *.org} is refused).</li>
 *   <li>{@code 203.0.113.7[:PORT]}, {@code [2001:db8::1][:PORT]}, {@code 10.1.0.0/16[:PORT]},
 *       {@code [fd00::/8][:PORT]}: addresses. IPv4 is four decimal octets; a range is at most /8 (IPv4) or /16 (IPv6)
 *       wide. An address listed here is reached even when it is loopback or private
 *       ({@link dev.crucible.egress.address.AddressRules}): the operator wrote it verbatim. A name on the list never
 *       makes a forbidden address reachable by itself.</li>
 * </ul>
 */
public final class EgressPolicy {
    private static final EgressPolicy NONE = new EgressPolicy(List.of());

    private final List<AllowEntry> entries;

    private EgressPolicy(List<AllowEntry> entries) {
        this.entries = List.copyOf(entries);
    }

    /** Nothing allowed: every request is refused with {@link EgressReason#NOT_LISTED}. */
    public static EgressPolicy none() {
        return NONE;
    }

    /**
     * The policy of {@code entries} (duplicates dropped, order kept); no entries is {@link #none()}.
     *
     * @throws IllegalArgumentException naming the first bad entry, what is wrong and the accepted forms
     */
    public static EgressPolicy parse(Collection<String> entries) {
        Set<AllowEntry> parsed = new LinkedHashSet<>();
        for (String entry : entries) {
            parsed.add(AllowEntry.parse(entry));
        }
        return parsed.isEmpty() ? NONE : new EgressPolicy(new ArrayList<>(parsed));
    }

    /** {@link #parse(Collection)} of a comma-separated list (as {@code --egress-allow} and the environment give it). */
    public static EgressPolicy parse(String commaSeparated) {
        if (commaSeparated.isBlank()) {
            return NONE;
        }
        return parse(List.of(commaSeparated.split(",", -1)));
    }

    /** Whether nothing is allowed. */
    public boolean isNone() {
        return entries.isEmpty();
    }

    /**
     * Whether {@code host} (a name or an IP literal, IPv6 with or without brackets) on {@code port} is listed. A host
     * that is not valid syntax is not allowed. This is the list only: the proxy also checks the addresses a name
     * resolves to.
     */
    public boolean allows(String host, int port) {
        String bare = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        try {
            return judge(Target.of(bare, port)) == EgressReason.ALLOWED;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** {@link EgressReason#ALLOWED}, {@link EgressReason#PORT_NOT_LISTED} or {@link EgressReason#NOT_LISTED}. */
    public EgressReason judge(Target target) {
        boolean named = false;
        for (AllowEntry entry : entries) {
            if (entry.namesHost(target)) {
                if (entry.port() == target.port()) {
                    return EgressReason.ALLOWED;
                }
                named = true;
            }
        }
        return named ? EgressReason.PORT_NOT_LISTED : EgressReason.NOT_LISTED;
    }

    /** Whether an address or range entry holds {@code address} on {@code port}: it may be reached though forbidden. */
    public boolean listsAddress(InetAddress address, int port) {
        for (AllowEntry entry : entries) {
            if (entry.listsAddress(address, port)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The policy of {@code requested}, each entry of which must be within this one: a listed name, a subdomain or
     * narrower wildcard of a listed wildcard, an address or range inside a listed range, on the same port. An empty
     * request is {@link #none()}.
     *
     * @throws IllegalArgumentException when a requested entry is not valid syntax (naming it)
     * @throws EgressNotAllowedException naming every requested entry this policy does not hold
     */
    public EgressPolicy narrow(Collection<String> requested) {
        EgressPolicy asked = parse(requested);
        List<String> outside = new ArrayList<>();
        for (AllowEntry entry : asked.entries) {
            if (entries.stream().noneMatch(mine -> mine.covers(entry))) {
                outside.add(entry.text());
            }
        }
        if (!outside.isEmpty()) {
            throw new EgressNotAllowedException(outside);
        }
        return asked;
    }

    /** Whether {@code entry} (one list entry, e.g. {@code pypi.org:443}) is within this policy; false for bad syntax. */
    public boolean holds(String entry) {
        try {
            AllowEntry asked = AllowEntry.parse(entry);
            return entries.stream().anyMatch(mine -> mine.covers(asked));
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /**
     * A line for each entry a sandbox's own proxy variables cannot reach (e.g. {@code 127.0.0.1:8000}): inside a
     * sandbox {@code localhost}, {@code 127.0.0.1} and {@code ::1} are its own loopback, which its {@code no_proxy}
     * keeps off the proxy, so such an entry is reached only by a client that ignores {@code no_proxy} and uses the
     * proxy anyway. An operator starting a server with one is told so (a warning, not a refusal: it is valid).
     */
    public List<String> loopbackWarnings() {
        return entries.stream().filter(AllowEntry::namesSandboxLoopback).map(e -> "egress entry " + e.text()
                + " names loopback, which a sandbox reaches without its proxy (no_proxy=localhost,127.0.0.1,::1: the"
                + " sandbox's own loopback), so the host's is reached only by a client that ignores no_proxy; serve it"
                + " on another address of the host's and list that").toList();
    }

    /** Every entry of this policy and of {@code other}, this one's first. */
    public EgressPolicy union(EgressPolicy other) {
        if (other.isNone()) {
            return this;
        }
        Set<AllowEntry> both = new LinkedHashSet<>(entries);
        both.addAll(other.entries);
        return new EgressPolicy(new ArrayList<>(both));
    }

    /** The entries in canonical form, ports written: {@code pypi.org:443}, {@code *.example.com:80}. */
    public List<String> entries() {
        return entries.stream().map(AllowEntry::text).toList();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EgressPolicy other && other.entries.equals(entries);
    }

    @Override
    public int hashCode() {
        return entries.hashCode();
    }

    /** The canonical entries, comma-separated: what {@link #parse(String)} reads back; empty for none. */
    @Override
    public String toString() {
        return String.join(",", entries());
    }
}
