/**
 * One sandbox's egress proxy: CONNECT and forward HTTP judged by a policy (names resolved once, every address
 * checked), relayed under its caps, each request's decision and the totals recorded; never grants or widens a list.
 */
package dev.crucible.egress.proxy;
