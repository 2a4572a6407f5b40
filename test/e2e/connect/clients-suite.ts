// The one connect fixture (temp dir, hub, PATH of real clients) that connect-clients.test.ts and the client parts it
// imports share: a module, so its `before` hook is registered once in that test file.
import { connectSuite } from '../../support/connect.ts';

export const suite = connectSuite('clients');
