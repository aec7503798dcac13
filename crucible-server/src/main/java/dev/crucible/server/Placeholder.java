package dev.crucible.server; final class Placeholder {}
