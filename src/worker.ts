import { runProcess } from './processes';

runProcess('worker');
