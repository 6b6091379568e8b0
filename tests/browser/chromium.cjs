// The launch every browser check shares: Debian's Chromium, headless, driven by
// playwright-core (no browser is downloaded; CHROMIUM names another binary).
'use strict';
const {chromium} = require('playwright-core');

function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // The sandbox needs user namespaces, which containers often lack; the page is our own.
    args: ['--no-sandbox', '--disable-gpu'],
  });
}

module.exports = {launchChromium};
